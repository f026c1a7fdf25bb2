import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { commitWithoutFlushWait, type Database, openDatabase, preparedStatement, queryRows, type StatementValues } from './client.js';
import { rootMessage } from './errors.js';

const url = process.env.TEST_DATABASE_URL;

/** Starts a statement that keeps the pool's one connection busy (drizzle queries start when `then` is called). */
const holdTheConnection = (database: Database, seconds: number) => database.db.execute(sql`select pg_sleep(${seconds})`).then(() => undefined);
/** A transaction that holds the pool's one connection for itself. */
const holdInTransaction = (database: Database, seconds: number) =>
  database.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_sleep(${seconds})`);
  });

describe.skipIf(!url)('the PostgreSQL pool', () => {
  it('queues a request behind a busy pool for longer than a new connection may take to open', async () => {
    const database = await openDatabase({ url, poolSize: 1, connectTimeoutMs: 200, poolWaitMs: 3000 });
    try {
      for (const hold of [holdTheConnection, holdInTransaction]) {
        const slow = hold(database, 0.6);
        await new Promise((resolve) => setTimeout(resolve, 100));
        const started = Date.now();
        await expect(database.db.execute(sql`select 1 as one`)).resolves.toBeDefined();
        expect(Date.now() - started).toBeGreaterThan(400);
        await slow;
      }
    } finally {
      await database.close();
    }
  });

  it('answers "timeout exceeded when trying to connect" when no connection was free within the pool wait', async () => {
    const database = await openDatabase({ url, poolSize: 1, connectTimeoutMs: 200, poolWaitMs: 300 });
    try {
      const slow = holdInTransaction(database, 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = Date.now();
      const error = await database.db.execute(sql`select 1`).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(rootMessage(error)).toBe('timeout exceeded when trying to connect');
      expect(Date.now() - started).toBeLessThan(900);
      await slow;
      // The refused statement never runs later, and the pool serves the next one.
      expect(await queryRows(database.db, sql`select 2 as two`)).toEqual([{ two: 2 }]);
    } finally {
      await database.close();
    }
  });

  it('reports its connections as the pool figures of /metrics: in use, waiting for one, idle', async () => {
    const database = await openDatabase({ url, poolSize: 1, poolWaitMs: 5000 });
    try {
      // No connection is opened before the first statement.
      expect(database.poolStats()).toEqual({ max: 1, inUse: 0, idle: 0, waiting: 0 });
      const slow = holdInTransaction(database, 0.5);
      await new Promise((resolve) => setTimeout(resolve, 150));
      const queued = database.db.execute(sql`select 1`).then(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // The transaction holds the connection; the statement behind it waits for it.
      expect(database.poolStats()).toEqual({ max: 1, inUse: 1, idle: 0, waiting: 1 });
      await Promise.all([slow, queued]);
      expect(database.poolStats()).toEqual({ max: 1, inUse: 0, idle: 1, waiting: 0 });
    } finally {
      await database.close();
    }
  });

  it('answers "Query read timeout" when the answer takes longer than the query timeout, and the pool serves the next statement', async () => {
    const database = await openDatabase({ url, poolSize: 2, queryTimeoutMs: 300 });
    try {
      const started = Date.now();
      const error = await queryRows(database.db, sql`select pg_sleep(2) as slept`).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(rootMessage(error)).toBe('Query read timeout');
      expect(Date.now() - started).toBeLessThan(1500);
      expect(await queryRows(database.db, sql`select ${'e'}::text as v`)).toEqual([{ v: 'e' }]);
    } finally {
      await database.close();
    }
  });
});

describe('preparedStatement', () => {
  const nextOf = preparedStatement<{ next: number; label: string; app: string }>(
    (param) => sql`select ${param('n')}::int + 1 as next, ${param('label')}::text || ${'!'}::text as label, current_setting('application_name') as app`,
  );

  it('answers as queryRows with the values by name, through a named statement prepared once per connection on PostgreSQL', async () => {
    const database = await openDatabase(url ? { url, poolSize: 1 } : {});
    try {
      for (const n of [1, 2, 3]) {
        const direct = await queryRows(database.db, sql`select ${n}::int + 1 as next, ${`n${n}`}::text || ${'!'}::text as label, current_setting('application_name') as app`);
        expect(await nextOf(database.db, { n, label: `n${n}` })).toEqual(direct);
        expect(direct[0]).toMatchObject({ next: n + 1, label: `n${n}!` });
      }
      if (url) {
        const prepared = await queryRows<{ name: string; statement: string }>(database.db, sql`select name, statement from pg_prepared_statements`);
        expect(prepared).toEqual([expect.objectContaining({ name: expect.stringMatching(/^q_[0-9a-f]{24}$/) })]);
        expect(prepared[0]!.statement).toContain('+ 1 as next');
      }
    } finally {
      await database.close();
    }
  });

  it('refuses a call that lacks a value instead of binding NULL (both paths)', async () => {
    const database = await openDatabase(url ? { url, poolSize: 1 } : {});
    try {
      await expect(nextOf(database.db, { n: 1 })).rejects.toThrow('No value for the statement parameter "label"');
      await database.db.transaction(async (tx) => {
        await expect(nextOf(tx, { n: 1 })).rejects.toThrow('No value for the statement parameter "label"');
        expect(await nextOf(tx, { n: 4, label: 'tx' })).toEqual([expect.objectContaining({ next: 5, label: 'tx!' })]);
      });
    } finally {
      await database.close();
    }
  });

  it('takes the values from several records, each name from the first record that has it (both paths)', async () => {
    const database = await openDatabase(url ? { url, poolSize: 1 } : {});
    try {
      const records: StatementValues = [{ n: 1 }, { label: 'first' }, { n: 7, label: 'second' }];
      expect(await nextOf(database.db, records)).toEqual([expect.objectContaining({ next: 2, label: 'first!' })]);
      await expect(nextOf(database.db, [{ n: 1 }, {}])).rejects.toThrow('No value for the statement parameter "label"');
      await database.db.transaction(async (tx) => {
        expect(await nextOf(tx, records)).toEqual([expect.objectContaining({ next: 2, label: 'first!' })]);
        await expect(nextOf(tx, [{ label: 'x' }])).rejects.toThrow('No value for the statement parameter "n"');
      });
    } finally {
      await database.close();
    }
  });
});

describe('commitWithoutFlushWait', () => {
  it.skipIf(!url)('turns synchronous commits off for the statement that evaluates it, and for nothing after it', async () => {
    const database = await openDatabase({ url, poolSize: 1 });
    try {
      const [during] = await queryRows<{ setting: string }>(
        database.db,
        sql`SELECT current_setting('synchronous_commit') AS setting FROM (SELECT 1) AS one WHERE ${commitWithoutFlushWait}`,
      );
      // Evaluated before the select list: the statement's transaction already runs without the wait.
      expect(during).toEqual({ setting: 'off' });
      expect(await queryRows(database.db, sql`SHOW synchronous_commit`)).toEqual([{ synchronous_commit: 'on' }]);
    } finally {
      await database.close();
    }
  });
});

describe('a prepared statement with commitWithoutFlushWait', () => {
  const statement = preparedStatement<{ one: number }>((p) => sql`SELECT ${p('value')}::int AS one WHERE ${commitWithoutFlushWait}`);
  const plain = preparedStatement<{ one: number }>((p) => sql`SELECT ${p('value')}::int AS one`);

  it('runs on its own and refuses a transaction, which it would commit without the flush wait as a whole', async () => {
    const database = await openDatabase(url ? { url, poolSize: 1 } : {});
    try {
      expect(await statement(database.db, { value: 1 })).toEqual([{ one: 1 }]);
      await expect(database.db.transaction((tx) => statement(tx, { value: 2 }))).rejects.toThrow('cannot run inside a transaction');
      // Other prepared statements still run in transactions.
      expect(await database.db.transaction((tx) => plain(tx, { value: 3 }))).toEqual([{ one: 3 }]);
      // queryRows refuses the fragment in a transaction too, however nested (a list, an alias); outside one it runs.
      const nested = sql`SELECT 4 AS one WHERE ${sql.join([sql`true`, commitWithoutFlushWait], sql` AND `)}`;
      await expect(database.db.transaction((tx) => queryRows(tx, nested))).rejects.toThrow('cannot run inside a transaction');
      await expect(database.db.transaction((tx) => queryRows(tx, sql`SELECT 1 FROM (SELECT 1) AS a WHERE ${sql`${commitWithoutFlushWait}`.as('w')}`))).rejects.toThrow(
        'cannot run inside a transaction',
      );
      expect(await queryRows(database.db, nested)).toEqual([{ one: 4 }]);
    } finally {
      await database.close();
    }
  });
});
