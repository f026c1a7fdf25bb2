import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { type SQL, sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';

/** The one database type every repo uses; PGlite and node-postgres both satisfy it. */
export type Db = PgDatabase<PgQueryResultHKT>;
export type Tx = PgTransaction<PgQueryResultHKT>;
/** Repos accept either the database or an open transaction. */
export type DbOrTx = Db | Tx;

export interface Database {
  readonly db: Db;
  readonly kind: 'pglite' | 'pg';
  /** Throws when the database cannot answer a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL connection string; when absent an embedded PGlite database is used. */
  url?: string;
  /** PGlite data directory; `memory://` keeps it in memory (tests). */
  pgliteDir?: string;
  poolSize?: number;
  /**
   * Longest wait for a connection, new or from a full pool (DATABASE_CONNECT_TIMEOUT_MS). Past it
   * the query fails ("timeout exceeded when trying to connect"), which the error handler answers
   * with 503. Default 2000 ms.
   */
  connectTimeoutMs?: number;
  /**
   * Client-side limit of one query (DATABASE_QUERY_TIMEOUT_MS): a server that stops answering
   * (partition, hung host) fails the query instead of holding the request. Default 30,000 ms.
   */
  queryTimeoutMs?: number;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.url) return openPostgres(options.url, options);
  return openPglite(options.pgliteDir ?? 'memory://');
}

/**
 * A pg pool with bounded waits. When PostgreSQL goes away, the clients whose connections broke
 * are dropped from the pool (pg-pool removes a client that errors, idle or busy) and the next
 * query opens a new connection, so the service recovers by itself once the server is back.
 */
function openPostgres(url: string, options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 2000,
    query_timeout: options.queryTimeoutMs ?? 30_000,
    // TCP keepalive notices a peer that vanished without closing (host down, network cut).
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => undefined);
  const db = drizzlePg(pool) as unknown as Db;
  return {
    db,
    kind: 'pg',
    ping: async () => {
      await pool.query('select 1');
    },
    close: () => pool.end(),
  };
}

export async function openPglite(dir: string, loadDataDir?: Blob): Promise<Database & { client: PGlite }> {
  if (!dir.startsWith('memory://')) mkdirSync(path.resolve(dir), { recursive: true });
  const client = await PGlite.create({ dataDir: dir, extensions: { vector }, loadDataDir });
  const db = drizzlePglite(client) as unknown as Db;
  return {
    db,
    client,
    kind: 'pglite',
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    close: () => client.close(),
  };
}

/** Runs raw SQL and returns its rows (node-postgres and PGlite both answer `{ rows }`). */
export async function queryRows<T>(db: DbOrTx, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}
