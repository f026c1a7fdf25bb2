import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitWithoutFlushWait, type Database, openDatabase, preparedStatement, queryRows } from './client.js';
import { rootMessage } from './errors.js';
import { createStatementBatcher } from './statement-batch.js';
import { observeStatements } from './statements.js';

const url = process.env.TEST_DATABASE_URL;
const table = `batch_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const t = sql.raw(table);

/** Adds 1 to key `k` (a new key starts at 1, a negative `add` breaks the CHECK), returning the value after. */
const bump = preparedStatement<{ k: string; v: number }>(
  (p) => sql`INSERT INTO ${t} (k, v) VALUES (${p('k')}::text, ${p('add')}::int)
    ON CONFLICT (k) DO UPDATE SET v = ${t}.v + excluded.v RETURNING k, v`,
  { batched: true },
);
/** Sleeps, then records `k` once (a second run changes nothing). */
const slowRecord = preparedStatement<{ k: string }>(
  (p) => sql`INSERT INTO ${t} (k, v) SELECT ${p('k')}::text, 1 FROM pg_sleep(${p('seconds')}::float8) ON CONFLICT (k) DO NOTHING RETURNING k`,
  { batched: true },
);
const backendPid = preparedStatement<{ pid: number }>(() => sql`SELECT pg_backend_pid() AS pid`, { batched: true });

const valuesOf = async (database: Database, prefix: string) =>
  Object.fromEntries(
    (await queryRows<{ k: string; v: number }>(database.db, sql`SELECT k, v FROM ${t} WHERE k LIKE ${`${prefix}%`} ORDER BY k`)).map((r) => [r.k, r.v]),
  );

/** The statements the app issues while `run` runs. */
async function statementsDuring(run: () => Promise<unknown>) {
  const texts: string[] = [];
  const stop = observeStatements((text) => texts.push(text));
  try {
    await run();
  } finally {
    stop();
  }
  return texts;
}

describe.skipIf(!url)('group commit of batched statements (db/statement-batch.ts)', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase({ url, poolSize: 4 });
    await database.db.execute(sql`CREATE TABLE ${t} (k text PRIMARY KEY, v int NOT NULL CHECK (v > 0))`);
  });
  afterAll(async () => {
    await database.db.execute(sql`DROP TABLE IF EXISTS ${t}`);
    await database.close();
  });

  it('sends the statements that arrive while one is at the server together, in one transaction, each answered with its own rows', async () => {
    let results: { k: string; v: number }[][] = [];
    const texts = await statementsDuring(async () => {
      results = await Promise.all(Array.from({ length: 30 }, (_, i) => bump(database.db, { k: `a${i}`, add: 1 })));
    });
    expect(results.map((rows) => rows[0]!.k)).toEqual(Array.from({ length: 30 }, (_, i) => `a${i}`));
    expect(results.every((rows) => rows.length === 1 && rows[0]!.v === 1)).toBe(true);
    const begins = texts.filter((text) => text === 'BEGIN').length;
    const commits = texts.filter((text) => text === 'COMMIT').length;
    // The first goes alone (nothing was in flight); the others wait for it and go together.
    expect(begins).toBeGreaterThanOrEqual(1);
    expect(begins).toBeLessThan(15);
    expect(commits).toBe(begins);
    expect(Object.keys(await valuesOf(database, 'a'))).toHaveLength(30);
  });

  it('runs a batch in arrival order: each statement sees the writes of those before it', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => bump(database.db, { k: 'b-same', add: 1 })));
    expect(results.map((rows) => rows[0]!.v).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(await valuesOf(database, 'b-')).toEqual({ 'b-same': 20 });
  });

  it("keeps one statement's error its own: the rest of its batch is written and answered", async () => {
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => bump(database.db, { k: `c${i}`, add: i === 7 ? -1 : 1 })));
    outcomes.forEach((outcome, i) => {
      if (i === 7) {
        expect(outcome.status).toBe('rejected');
        expect(rootMessage((outcome as PromiseRejectedResult).reason)).toMatch(/check constraint/);
      } else {
        expect(outcome.status, `statement ${i}`).toBe('fulfilled');
      }
    });
    const written = await valuesOf(database, 'c');
    expect(Object.keys(written)).toHaveLength(19);
    expect(written.c7).toBeUndefined();
  });

  it('answers a statement sent alone that fails by itself with its error, without running it again', async () => {
    let error: unknown;
    const texts = await statementsDuring(async () => {
      error = await bump(database.db, { k: 'g-alone', add: -1 }).then(
        () => undefined,
        (failure: unknown) => failure,
      );
    });
    expect(rootMessage(error)).toMatch(/check constraint/);
    expect(texts.filter((text) => text.startsWith(`INSERT INTO ${table}`))).toHaveLength(1);
  });

  it('runs every statement of a batch again alone when its connection is lost mid-batch, each written once', async () => {
    const [{ pid }] = (await backendPid(database.db, {})) as [{ pid: number }];
    // One statement in flight; the next ten wait for it and then go together, the first sleeping.
    const first = slowRecord(database.db, { k: 'd-first', seconds: 0.3 });
    const batch = Array.from({ length: 10 }, (_, i) => slowRecord(database.db, { k: `d${i}`, seconds: i === 0 ? 1 : 0 }));
    await first;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [killed] = await queryRows<{ done: boolean }>(database.db, sql`SELECT pg_terminate_backend(${pid}) AS done`);
    expect(killed!.done).toBe(true);
    const rows = await Promise.all(batch);
    expect(rows.map((r) => r[0]?.k)).toEqual(Array.from({ length: 10 }, (_, i) => `d${i}`));
    expect(Object.keys(await valuesOf(database, 'd'))).toHaveLength(11);
    // A new batch connection serves what comes next.
    const [{ pid: next }] = (await backendPid(database.db, {})) as [{ pid: number }];
    expect(next).not.toBe(pid);
  });

  it('lets the batch connection wait for a lock only briefly: the statement then waits alone on the pool, and the batches behind it go on', async () => {
    await bump(database.db, { k: 'f-locked', add: 1 });
    let released = 0;
    const holder = database.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT v FROM ${t} WHERE k = 'f-locked' FOR UPDATE`);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      released = Date.now();
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    const blocked = bump(database.db, { k: 'f-locked', add: 1 }).then((rows) => ({ rows, at: Date.now() }));
    const behind = Promise.all(Array.from({ length: 5 }, (_, i) => bump(database.db, { k: `f${i}`, add: 1 }))).then(() => Date.now());
    const behindAt = await behind;
    // Behind the lock for the batch connection's lock_timeout (1 s), not for the holder's 2.5 s.
    expect(behindAt - started).toBeLessThan(2000);
    const { rows, at } = await blocked;
    await holder;
    expect(at).toBeGreaterThanOrEqual(released);
    expect(rows[0]!.v).toBe(2);
    expect(await valuesOf(database, 'f')).toEqual({ f0: 1, f1: 1, f2: 1, f3: 1, f4: 1, 'f-locked': 2 });
  });

  it('refuses to batch a statement that commits without waiting for the flush', async () => {
    const unsafe = preparedStatement(() => sql`SELECT ${commitWithoutFlushWait} AS set`, { batched: true });
    await expect(unsafe(database.db, {})).rejects.toThrow(/cannot run inside a transaction/);
  });

  it('fails what is still waiting once the database is closed', async () => {
    const own = await openDatabase({ url, poolSize: 1 });
    const slow = slowRecord(own.db, { k: 'e-slow', seconds: 0.3 });
    const waiting = bump(own.db, { k: 'e-waiting', add: 1 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    const slowDone = slow.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await own.close();
    expect(rootMessage(await waiting)).toBe('The database is closed');
    await slowDone;
  });
});

describe('a statement sent alone on the batch connection, failing', () => {
  /** A batcher whose connection fails every statement with `error`; the pool (runAlone) answers. */
  function batcherFailingWith(error: Error) {
    const ranAlone: string[] = [];
    const failing = { query: () => Promise.reject(error), on: () => undefined, end: async () => undefined };
    const batcher = createStatementBatcher({
      connect: async () => failing as unknown as pg.Client,
      runAlone: async (config) => {
        ranAlone.push(config.name);
        return { rows: [{ alone: true }] };
      },
    });
    return { batcher, ranAlone };
  }
  const statement = { name: 'q', text: 'SELECT 1', values: [] };

  it.each([
    ['a socket error whose code is five letters (EPIPE)', Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' })],
    ['the connection closed', new Error('Connection terminated unexpectedly')],
    ['a deadlock', Object.assign(new Error('deadlock detected'), { code: '40P01', severity: 'ERROR' })],
    ['a lock timeout', Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03', severity: 'ERROR' })],
  ])('runs again alone on the pool after %s', async (_, error) => {
    const { batcher, ranAlone } = batcherFailingWith(error);
    await expect(batcher.query(statement)).resolves.toEqual({ rows: [{ alone: true }] });
    expect(ranAlone).toEqual(['q']);
  });

  it("answers the server's own error as it is, without running it again", async () => {
    const violation = Object.assign(new Error('duplicate key value violates unique constraint "x"'), { code: '23505', severity: 'ERROR' });
    const { batcher, ranAlone } = batcherFailingWith(violation);
    await expect(batcher.query(statement)).rejects.toBe(violation);
    expect(ranAlone).toEqual([]);
  });
});
