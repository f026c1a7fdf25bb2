import pg from 'pg';
import { sql } from 'drizzle-orm';
import { inject } from 'vitest';
import { type Database, openDatabase, openPglite, queryRows } from '../../src/db/client.js';
import { runMigrations } from '../../src/db/migrate.js';
import { withDatabase } from './global-setup.js';

export interface TestDatabase extends Database {
  /** Connection string of this worker's database (PostgreSQL only). */
  url?: string;
}

let shared: Promise<TestDatabase> | undefined;

/**
 * This worker's database, opened and migrated once and shared by every test file the worker
 * runs (vitest runs with isolate: false, so module state survives between files).
 */
export function testDatabase(): Promise<TestDatabase> {
  shared ??= open();
  return shared;
}

async function open(): Promise<TestDatabase> {
  const baseUrl = process.env.TEST_DATABASE_URL;
  if (!baseUrl) {
    const database = await openPglite('memory://');
    await runMigrations(database);
    return database;
  }
  const runId = inject('testRunId');
  const name = `wsai_test_${runId}_w${process.env.VITEST_POOL_ID ?? process.pid}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}" TEMPLATE "wsai_test_${runId}_tpl"`);
  await admin.end();
  const url = withDatabase(baseUrl, name);
  const database = await openDatabase({ url, poolSize: 20 });
  return { ...database, url };
}

let tableList: string | undefined;
/** The tables in an order that deletes referencing rows first, and the sequences (null: TRUNCATE). */
let deletion: { tables: string[]; sequences: string[] } | undefined | null;

/**
 * Empties every application table (not the migrations journal) and restarts id sequences.
 * With DELETE in foreign-key order rather than TRUNCATE: on PostgreSQL a TRUNCATE of the 40
 * tables makes new files for every table and index and took ~270 ms, the DELETEs of a test's
 * few rows a few ms (it runs before every test: the role matrix spent two thirds of its time
 * there; on PGlite 40 %). TRUNCATE remains for a schema whose references form a cycle.
 */
export async function truncateAll(database: Database): Promise<void> {
  if (!tableList) {
    const rows = await queryRows<{ tablename: string }>(
      database.db,
      sql`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
    );
    tableList = rows.map((r) => `"${r.tablename}"`).join(', ');
  }
  if (deletion === undefined) deletion = await deletionOrder(database);
  if (deletion) {
    const { tables, sequences } = deletion;
    await database.db.transaction(async (tx) => {
      for (const table of tables) await tx.execute(sql.raw(`DELETE FROM "${table}"`));
      for (const sequence of sequences) await tx.execute(sql`SELECT setval(${sequence}::regclass, 1, false)`);
    });
  } else if (tableList) {
    await database.db.execute(sql.raw(`TRUNCATE ${tableList} RESTART IDENTITY CASCADE`));
  }
  // Each embedding generation's HNSW index is made at run time, partial on its id; ids restart,
  // so an index left behind would cover the next generation 1 at the old one's size.
  const generationIndexes = await queryRows<{ indexname: string }>(
    database.db,
    sql`SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexname LIKE 'chunk_embeddings_hnsw_%'`,
  );
  for (const { indexname } of generationIndexes) await database.db.execute(sql.raw(`DROP INDEX IF EXISTS "${indexname}"`));
}

/** Public tables, each after every table that references it; null when references form a cycle. */
async function deletionOrder(database: Database): Promise<{ tables: string[]; sequences: string[] } | null> {
  const tables = (
    await queryRows<{ tablename: string }>(database.db, sql`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
  ).map((r) => r.tablename);
  const references = await queryRows<{ child: string; parent: string }>(
    database.db,
    sql`SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE c.contype = 'f' AND n.nspname = 'public' AND c.conrelid <> c.confrelid`,
  );
  const unquote = (name: string) => name.replace(/^"|"$/g, '');
  const referencedBy = new Map(tables.map((table) => [table, new Set<string>()]));
  for (const { child, parent } of references) referencedBy.get(unquote(parent))?.add(unquote(child));
  const ordered: string[] = [];
  const remaining = new Set(tables);
  while (remaining.size > 0) {
    const next = [...remaining].filter((table) => [...referencedBy.get(table)!].every((child) => !remaining.has(child)));
    if (next.length === 0) return null;
    for (const table of next.sort()) {
      ordered.push(table);
      remaining.delete(table);
    }
  }
  const sequences = (
    await queryRows<{ name: string }>(
      database.db,
      sql`SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename) AS name FROM pg_sequences WHERE schemaname = 'public'`,
    )
  ).map((r) => r.name);
  return { tables: ordered, sequences };
}

/**
 * This worker's PostgreSQL database reached through `host:port` instead (a TCP proxy in front of
 * the server, for fault tests). Undefined on PGlite.
 */
export async function workerDatabaseUrlVia(host: string, port: number): Promise<string | undefined> {
  const { url } = await testDatabase();
  if (!url) return undefined;
  const parsed = new URL(url);
  parsed.hostname = host;
  parsed.port = String(port);
  return parsed.toString();
}
