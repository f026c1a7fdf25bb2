import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { type Database, openDatabase, queryRows, queryRowsPrepared } from './client.js';
import { rootMessage } from './errors.js';

const url = process.env.TEST_DATABASE_URL;

/** Starts a query that keeps the pool's one connection busy (drizzle queries start when `then` is called). */
const holdTheConnection = (database: Database, seconds: number) => database.db.execute(sql`select pg_sleep(${seconds})`).then(() => undefined);

describe.skipIf(!url)('the PostgreSQL pool', () => {
  it('queues a request behind a full pool for longer than a new connection may take to open', async () => {
    const database = await openDatabase({ url, poolSize: 1, connectTimeoutMs: 200, poolWaitMs: 3000 });
    try {
      const slow = holdTheConnection(database, 0.6);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = Date.now();
      await expect(database.db.execute(sql`select 1 as one`)).resolves.toBeDefined();
      expect(Date.now() - started).toBeGreaterThan(400);
      await slow;
    } finally {
      await database.close();
    }
  });

  it('answers "timeout exceeded when trying to connect" once the pool wait is over', async () => {
    const database = await openDatabase({ url, poolSize: 1, connectTimeoutMs: 200, poolWaitMs: 300 });
    try {
      const slow = holdTheConnection(database, 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const error = await database.db.execute(sql`select 1`).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(rootMessage(error)).toBe('timeout exceeded when trying to connect');
      await slow;
    } finally {
      await database.close();
    }
  });
});

describe('queryRowsPrepared', () => {
  it('answers as queryRows, through a named statement prepared once per connection on PostgreSQL', async () => {
    const database = await openDatabase(url ? { url, poolSize: 1 } : {});
    try {
      const query = (n: number) => sql`select ${n}::int + 1 as next, current_setting('application_name') as app`;
      for (const n of [1, 2, 3]) {
        expect(await queryRowsPrepared(database.db, query(n))).toEqual(await queryRows(database.db, query(n)));
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
});
