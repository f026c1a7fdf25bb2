import { types } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from './client.js';

/**
 * PGlite's statements with parameters run as named prepared statements (pglite-named.ts), through
 * the embedded database as the service opens it: the same answers and errors as PGlite's own
 * `query`, one parse and plan per text.
 */
let database: Awaited<ReturnType<typeof openPglite>>;
const client = () => database.client;

/** The named statements PostgreSQL holds for `text`, with how often each was run. */
async function preparedFor(text: string) {
  const { rows } = await client().query<{ name: string; runs: number }>(
    'SELECT name, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements WHERE statement = $1 AND NOT from_sql',
    [text],
  );
  return rows;
}

beforeAll(async () => {
  database = await openPglite('memory://');
  await client().exec(`CREATE TABLE samples (
    id int PRIMARY KEY, label text UNIQUE, at timestamptz, doc jsonb, flag boolean, raw bytea, tags int[], amount numeric, ref uuid
  )`);
});
afterAll(async () => {
  await database.close();
});

describe('statements with parameters on the embedded database', () => {
  it('answer as PGlite does: every type, affected rows, and text kept where the caller asks', async () => {
    const at = new Date('2026-11-29T12:00:00.123Z');
    const inserted = await client().query(
      'INSERT INTO samples (id, label, at, doc, flag, raw, tags, amount, ref) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      [1, 'one', at, { a: [1, 'x'] }, true, new Uint8Array([0, 255]), [3, 4], '12.50', '01a2272c-4305-76e7-92e1-6723ce314a32'],
    );
    expect(inserted.affectedRows).toBe(1);
    expect(inserted.rows).toEqual([]);
    await client().query('INSERT INTO samples (id, label) VALUES ($1, $2)', [2, null]);

    const { rows, fields } = await client().query<Record<string, unknown>>('SELECT * FROM samples WHERE id = $1', [1]);
    expect(fields.map((f) => f.name)).toEqual(['id', 'label', 'at', 'doc', 'flag', 'raw', 'tags', 'amount', 'ref']);
    expect(rows).toEqual([
      {
        id: 1,
        label: 'one',
        at,
        doc: { a: [1, 'x'] },
        flag: true,
        raw: new Uint8Array([0, 255]),
        tags: [3, 4],
        amount: '12.50',
        ref: '01a2272c-4305-76e7-92e1-6723ce314a32',
      },
    ]);
    const nulls = await client().query('SELECT label, at FROM samples WHERE id = $1', [2]);
    expect(nulls.rows).toEqual([{ label: null, at: null }]);

    // drizzle's PGlite session: rows as arrays, timestamps as PostgreSQL's text.
    const asText = await client().query('SELECT id, at FROM samples WHERE id = $1', [1], {
      rowMode: 'array',
      parsers: { [types.TIMESTAMPTZ]: (value: string) => value },
    });
    expect(asText.rows).toEqual([[1, '2026-11-29 12:00:00.123+00']]);

    const updated = await client().query('UPDATE samples SET flag = $1 WHERE id <= $2', [false, 2]);
    expect(updated.affectedRows).toBe(2);
  });

  it('are parsed and planned once per text, from the second time it runs', async () => {
    const text = 'SELECT label FROM samples WHERE id = $1';
    await client().query(text, [1]);
    expect(await preparedFor(text)).toEqual([]);
    for (const id of [2, 1, 2]) await client().query(text, [id]);
    expect(await preparedFor(text)).toEqual([{ name: expect.stringMatching(/^pgl_/), runs: 3 }]);
    // Through drizzle (the repos' path) too.
    await database.db.execute(sql`SELECT label FROM samples WHERE id = ${1}`);
    await database.db.execute(sql`SELECT label FROM samples WHERE id = ${2}`);
    expect(await preparedFor(text)).toEqual([{ name: expect.any(String), runs: 5 }]);
  });

  it('fail with their own error, and the next statement runs', async () => {
    const failed = await client()
      .query('INSERT INTO samples (id, label) VALUES ($1, $2)', [3, 'one'])
      .catch((error: unknown) => error as { code?: string; constraint?: string; severity?: string });
    expect(failed).toMatchObject({ code: '23505', constraint: 'samples_label_key', severity: 'ERROR' });
    const invalid = await client()
      .query('SELECT label FROM samples WHERE id = $1', ['not a number'])
      .catch((error: unknown) => error as { code?: string });
    expect(invalid).toMatchObject({ code: '22P02' });
    const syntax = await client()
      .query('SELEC label FROM samples WHERE id = $1', [1])
      .catch((error: unknown) => error as { code?: string });
    expect(syntax).toMatchObject({ code: '42601' });
    expect((await client().query('SELECT count(*)::int AS n FROM samples WHERE id > $1', [0])).rows).toEqual([{ n: 2 }]);
  });

  it('are prepared again when the schema changed under them', async () => {
    const text = 'SELECT * FROM samples WHERE id = $1';
    await client().query(text, [1]);
    expect(Object.keys((await client().query<object>(text, [1])).rows[0]!)).not.toContain('extra');
    expect(await preparedFor(text)).toHaveLength(1);
    await client().exec("ALTER TABLE samples ADD COLUMN extra text DEFAULT 'e'");
    const after = await client().query<{ extra: string }>(text, [1]);
    expect(after.rows[0]!.extra).toBe('e');
    // The stale one is closed: one named statement for the text.
    expect(await preparedFor(text)).toHaveLength(1);
  });

  it('keep at most 256 named statements, closing the oldest', async () => {
    for (let i = 0; i < 300; i++) {
      await client().query(`SELECT $1::int + ${i} AS n`, [1]);
      await client().query(`SELECT $1::int + ${i} AS n`, [2]);
    }
    const { rows } = await client().query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'pgl_%'");
    expect(rows[0]!.n).toBeLessThanOrEqual(256);
    expect(rows[0]!.n).toBeGreaterThan(200);
    // The oldest of them runs again (unnamed, then prepared anew).
    for (const value of [1, 2]) expect((await client().query<{ n: number }>('SELECT $1::int + 0 AS n', [value])).rows).toEqual([{ n: value }]);
  });

  it('inside a transaction run as PGlite runs them, and the transaction sees its own writes', async () => {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO samples (id, label) VALUES (${10}, ${'ten'})`);
      const rows = await tx.execute(sql`SELECT label FROM samples WHERE id = ${10}`);
      expect((rows as unknown as { rows: unknown[] }).rows).toEqual([{ label: 'ten' }]);
    });
    expect((await client().query('SELECT label FROM samples WHERE id = $1', [10])).rows).toEqual([{ label: 'ten' }]);
  });
});
