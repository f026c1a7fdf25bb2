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

/** Empties every application table (not the migrations journal) and restarts id sequences. */
export async function truncateAll(database: Database): Promise<void> {
  if (!tableList) {
    const rows = await queryRows<{ tablename: string }>(
      database.db,
      sql`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
    );
    tableList = rows.map((r) => `"${r.tablename}"`).join(', ');
  }
  if (tableList) await database.db.execute(sql.raw(`TRUNCATE ${tableList} RESTART IDENTITY CASCADE`));
  // Each embedding generation's HNSW index is made at run time, partial on its id; ids restart,
  // so an index left behind would cover the next generation 1 at the old one's size.
  const generationIndexes = await queryRows<{ indexname: string }>(
    database.db,
    sql`SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexname LIKE 'chunk_embeddings_hnsw_%'`,
  );
  for (const { indexname } of generationIndexes) await database.db.execute(sql.raw(`DROP INDEX IF EXISTS "${indexname}"`));
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
