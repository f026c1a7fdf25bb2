import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { Column, is, Name, Param, Placeholder, SQL, sql, StringChunk, Subquery, Table, View } from 'drizzle-orm';
import { type PgDatabase, type PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import type { PoolStats } from '../platform/metrics.js';
import { autoSharedBuffersMb, MIN_SHARED_BUFFERS_MB } from './pglite-buffers.js';
import { explainOpenFailure, guardPglite } from './pglite-guard.js';
import { nameStatements } from './pglite-named.js';
import { batcherOf, isPostgres, traceQueries } from './statements.js';

export { observeStatements } from './statements.js';

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
  /** Connections in use, idle and awaited, for /metrics. */
  poolStats(): PoolStats;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL connection string; when absent an embedded PGlite database is used. */
  url?: string;
  /** PGlite data directory; `memory://` keeps it in memory (tests). */
  pgliteDir?: string;
  /** PGlite's `shared_buffers` in MB; default: sized to the data directory. */
  pgliteSharedBuffersMb?: number;
  poolSize?: number;
  /**
   * Longest wait for a new connection to PostgreSQL (DATABASE_CONNECT_TIMEOUT_MS): past it the
   * query fails ("Connection terminated due to connection timeout"), answered with 503. Default 2000 ms.
   */
  connectTimeoutMs?: number;
  /**
   * Longest wait for a connection of a full pool (DATABASE_POOL_WAIT_MS), so a burst of requests
   * queues for the pool instead of failing; past it "timeout exceeded when trying to connect" (503).
   * Default 10,000 ms.
   */
  poolWaitMs?: number;
  /**
   * Client-side limit of one query (DATABASE_QUERY_TIMEOUT_MS): a server that stops answering
   * (partition, hung host) fails the query ("Query read timeout") instead of holding the request.
   * Default 30,000 ms.
   */
  queryTimeoutMs?: number;
  /** PGlite only: called once if the embedded database stops for good (see openPglite). */
  onStopped?: (error: Error) => void;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.url) {
    // The PostgreSQL driver is loaded only on that profile (the embedded one never needs it).
    const [{ default: pg }, { drizzle }, { openPostgres }] = await Promise.all([
      import('pg'),
      import('drizzle-orm/node-postgres'),
      import('./postgres.js'),
    ]);
    return openPostgres({ pg, drizzlePg: drizzle }, options.url, options);
  }
  return openPglite(options.pgliteDir ?? 'memory://', { onStopped: options.onStopped, sharedBuffersMb: options.pgliteSharedBuffersMb });
}

/**
 * pgvector's search settings for every connection (knowledge-search.ts vectorCandidates):
 * iterative index scans keep scanning until enough rows pass a filter (a chat's documents),
 * in relaxed order (the search re-sorts), and a candidate list of 100 per scan step, which gives
 * recall@10 ≥ 0.95 against an exact scan at 100,000 and 300,000 chunks (bench/RESULTS.md).
 */
export const VECTOR_SEARCH_SETTINGS = { 'hnsw.ef_search': '100', 'hnsw.iterative_scan': 'relaxed_order' } as const;

/**
 * The embedded profile's: a shorter candidate list per scan step. PGlite runs a hybrid search's
 * lexical and vector statements one after the other on one thread (PostgreSQL runs them side by
 * side), so the vector scan's time adds up; at 100,000 chunks recall@10 stays ≥ 0.95 with 60
 * (bench/RESULTS.md, docs/decisions.md "Embedding generations").
 */
export const EMBEDDED_VECTOR_SEARCH_SETTINGS = { ...VECTOR_SEARCH_SETTINGS, 'hnsw.ef_search': '60' } as const;

export interface PgliteOptions {
  loadDataDir?: Blob;
  /** PostgreSQL's `shared_buffers` in MB; default: sized to the data directory (pglite-buffers.ts). */
  sharedBuffersMb?: number;
  /**
   * Called once if the instance stops for good (PostgreSQL's PANIC or FATAL, e.g. its
   * write-ahead log could not grow on a full disk; pglite-guard.ts). server.ts restarts the process.
   */
  onStopped?: (error: Error) => void;
}

export async function openPglite(dir: string, options: PgliteOptions = {}): Promise<Database & { client: PGlite }> {
  const onDisk = !dir.startsWith('memory://');
  if (onDisk) mkdirSync(path.resolve(dir), { recursive: true });
  const sharedBuffersMb = options.sharedBuffersMb ?? (onDisk ? autoSharedBuffersMb(dir) : MIN_SHARED_BUFFERS_MB);
  const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffersMb}MB`];
  const client = await PGlite.create({ dataDir: dir, extensions: { vector }, loadDataDir: options.loadDataDir, startParams }).catch((error: unknown) => {
    throw onDisk ? explainOpenFailure(dir, error) : error;
  });
  await client.exec(
    Object.entries(EMBEDDED_VECTOR_SEARCH_SETTINGS)
      .map(([name, value]) => `SET ${name} = ${value};`)
      .join(' '),
  );
  nameStatements(client);
  traceQueries(client);
  const guard = guardPglite(client, { onStopped: options.onStopped, wrapTransaction: traceQueries });
  // One connection, queries run one at a time: in use while any runs, the rest wait.
  let inFlight = 0;
  const counted =
    <A extends unknown[], R>(run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      inFlight += 1;
      try {
        return await run(...args);
      } finally {
        inFlight -= 1;
      }
    };
  client.query = counted(client.query.bind(client)) as typeof client.query;
  client.exec = counted(client.exec.bind(client)) as typeof client.exec;
  client.transaction = counted(client.transaction.bind(client)) as typeof client.transaction;
  const db = drizzlePglite(client) as unknown as Db;
  return {
    db,
    client,
    kind: 'pglite',
    poolStats: () => ({ max: 1, inUse: Math.min(inFlight, 1), idle: inFlight > 0 ? 0 : 1, waiting: Math.max(inFlight - 1, 0) }),
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    // A stopped instance is left alone: closing it would run postgres again.
    close: async () => {
      if (!guard.stopped()) await client.close();
    },
  };
}

/**
 * A PostgreSQL array literal of text values, to pass as ONE parameter and cast (`::uuid[]`,
 * `::text[]`): drizzle spreads a JS array into one parameter per element.
 */
export const textArrayLiteral = (values: readonly string[]): string =>
  `{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;

/** Runs raw SQL and returns its rows (node-postgres and PGlite both answer `{ rows }`). */
export async function queryRows<T>(db: DbOrTx, query: SQL): Promise<T[]> {
  if (is(db, PgTransaction)) refuseFlushWaitInTransaction(query);
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

/**
 * An SQL condition, always true, that lets the statement's own transaction commit without
 * waiting for its WAL flush (`synchronous_commit` off for that transaction only: `set_config`
 * with is_local; the connection's next transaction waits again). Place it where the statement
 * evaluates it for the rows it writes (a WHERE, a CASE around a written value). For writes
 * whose loss in a database crash harms nothing, or that a later synchronous commit flushes
 * before anyone relies on them (a commit flushes all WAL written before it): on the streamed
 * send's path there were two flushes before the model call (docs/decisions.md, "Hot paths").
 * Inside an explicit transaction it would apply to the whole transaction: single statements only.
 * queryRows and preparedStatement refuse a statement that contains it on a transaction handle.
 */
export const commitWithoutFlushWait = sql`set_config('synchronous_commit', 'off', true) IS NOT NULL`;

/** Whether `chunk` is or holds `fragment` (the same SQL object): in nested SQL, lists, aliases, subqueries. */
function holdsFragment(chunk: unknown, fragment: SQL): boolean {
  if (chunk === fragment) return true;
  if (Array.isArray(chunk)) return chunk.some((part) => holdsFragment(part, fragment));
  if (is(chunk, SQL)) return chunk.queryChunks.some((part) => holdsFragment(part, fragment));
  if (is(chunk, SQL.Aliased)) return holdsFragment(chunk.sql, fragment);
  if (is(chunk, Subquery)) return holdsFragment(chunk._.sql, fragment);
  // Leaves (their getSQL wraps themselves in a new SQL: walking it would never end).
  if (chunk === null || typeof chunk !== 'object' || is(chunk, StringChunk) || is(chunk, Param) || is(chunk, Placeholder) || is(chunk, Name)) return false;
  if (is(chunk, Table) || is(chunk, Column) || is(chunk, View)) return false;
  // A query builder placed in a template (drizzle renders it through getSQL()).
  const wrapper = chunk as { getSQL?: () => SQL };
  return typeof wrapper.getSQL === 'function' && holdsFragment(wrapper.getSQL(), fragment);
}

function refuseFlushWaitInTransaction(query: SQL): void {
  // The whole transaction would commit without waiting for its flush, not just this write.
  if (holdsFragment(query, commitWithoutFlushWait)) throw new Error('A statement with commitWithoutFlushWait cannot run inside a transaction');
}


/** A value of a prepared statement: one parameter each (dates as ISO strings, JSON as text). */
export type StatementValue = string | number | boolean | null;
type StatementRecord = Readonly<Record<string, StatementValue>>;
/**
 * A call's values by name: one record, or several, looked up in order (the first that has the
 * name). Several, because merging records with object spread (`{ ...a, ...b }`) cost 2-30 µs a
 * call on Node 20 (V8 11.3; under 1 µs on Node 24): ~4 % of the server's main thread per webhook
 * event (docs/decisions.md, "Hot paths").
 */
export type StatementValues = StatementRecord | readonly StatementRecord[];
/** The parameter named `name` in a prepared statement's text. */
export type StatementParam = (name: string) => SQL;

export interface PreparedStatementOptions {
  /**
   * On PostgreSQL, outside a transaction: the statement may share a transaction with other
   * callers' batched statements (group commit, db/statement-batch.ts), so it must be a whole unit
   * of work that is idempotent; one that sets commitWithoutFlushWait cannot be batched.
   */
  batched?: boolean;
}

/** The value named `name`, from the first record that has it; throws when none has it. */
function valueOf(records: readonly StatementRecord[], name: string): StatementValue {
  for (const record of records) if (name in record) return record[name]!;
  throw new Error(`No value for the statement parameter "${name}"`);
}

/**
 * A hot statement whose text never varies, only its values: `build(param)` composes it with
 * `param(name)` wherever a value goes, and each call passes the values by name.
 *
 * On PostgreSQL (outside a transaction) the text is composed and rendered once, with
 * placeholders; a call only fills in its values and runs a named prepared statement, parsed once
 * per connection and planned from the server's plan cache, so neither drizzle nor the server
 * builds the statement again (a webhook event's statement took ~7 % of its CPU to build).
 * Elsewhere (PGlite, a transaction) it is composed with the values each call (on PGlite, outside a
 * transaction, its text is then parsed and planned once: pglite-named.ts). One round trip either
 * way. A value missing from `values` throws rather than binding NULL.
 */
export function preparedStatement<Row>(build: (param: StatementParam) => SQL, { batched = false }: PreparedStatementOptions = {}) {
  /** The text, and each parameter's value name (or its constant value, rendered once). */
  let rendered: { name: string; text: string; slots: ({ value: string } | { constant: unknown })[] } | undefined;
  return async (db: DbOrTx, values: StatementValues): Promise<Row[]> => {
    const records: readonly StatementRecord[] = Array.isArray(values) ? values : [values];
    if (!isPostgres(db)) {
      return queryRows<Row>(
        db,
        build((name) => sql`${valueOf(records, name)}`),
      );
    }
    if (!rendered) {
      const dialect = (db as unknown as { dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } } }).dialect;
      const query = build((name) => sql`${sql.placeholder(name)}`);
      // A batch is one transaction: the setting would apply to the others' statements too.
      if (batched) refuseFlushWaitInTransaction(query);
      const { sql: text, params } = dialect.sqlToQuery(query);
      const slots = params.map((param) => (is(param, Placeholder) ? { value: param.name as string } : { constant: param }));
      rendered = { name: `q_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`, text, slots };
    }
    const filled = rendered.slots.map((slot) => ('value' in slot ? valueOf(records, slot.value) : slot.constant));
    const pool = (db as unknown as { $client: { query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: Row[] }> } }).$client;
    const runner = (batched && batcherOf(db)) || pool;
    const result = await runner.query({ name: rendered.name, text: rendered.text, values: filled });
    return result.rows as Row[];
  };
}
