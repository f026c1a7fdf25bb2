import { sql } from 'drizzle-orm';
import type { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import type postgresDriver from 'postgres';
import { startClientSpan, tracingEnabled } from '../platform/tracing.js';
import { type Database, type DatabaseOptions, type Db, VECTOR_SEARCH_SETTINGS } from './client.js';
import { markPostgres, reportStatement, statementAttributes, statementName } from './statements.js';

/** The part of a postgres.js query this module drives (its Query is a Promise that runs when awaited). */
interface DriverQuery extends Promise<unknown> {
  /** The connection's backend once the statement was written to it; null while it waits in the client. */
  state: unknown;
  reject(error: Error): void;
}

/** A statement that waited longer than DATABASE_POOL_WAIT_MS in the client for a connection to take it (503). */
export const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';
/** A statement whose answer took longer than DATABASE_QUERY_TIMEOUT_MS (503): the server stopped answering. */
export const QUERY_TIMEOUT = 'Query read timeout';

/** Statements with more parameters than this (bulk inserts of varying size) are not prepared on the server. */
const MAX_PREPARED_PARAMETERS = 64;

type PostgresModule = typeof postgresDriver;
type PostgresSql = ReturnType<PostgresModule>;

/**
 * PostgreSQL through postgres.js, which pipelines: statements issued while a connection is busy
 * are written to it together, without waiting for the answers before them, and the server
 * answers them in order. Under a burst (1,000 streamed sends at once) a write carries many
 * statements instead of one, and the server's process is woken once for them; with node-postgres
 * each statement was its own write, each waking its server process, and admitting a send cost
 * the app's thread ~0.6 ms more (docs/decisions.md, "Hot paths", "The driver").
 *
 * Each statement is bounded twice on the client (postgres.js has neither bound): it must be
 * written to a connection within `poolWaitMs` (every connection held by a transaction or its
 * pipeline full) and answered within `queryTimeoutMs` of being issued, so a server that stops
 * answering fails requests (503) instead of holding them (see `fail` for what that leaves running). A connection that breaks is dropped
 * and the next statement opens a new one, so the service recovers by itself once the server is back.
 */
export function openPostgres(
  { postgres, drizzle }: { postgres: PostgresModule; drizzle: typeof drizzlePostgres },
  url: string,
  options: DatabaseOptions,
): Database {
  const max = options.poolSize ?? 10;
  const poolWaitMs = options.poolWaitMs ?? 10_000;
  const queryTimeoutMs = options.queryTimeoutMs ?? 30_000;
  const client = postgres(url, {
    max,
    connect_timeout: (options.connectTimeoutMs ?? 2000) / 1000,
    // Set at connection start: no round trip (a connection string's own settings take precedence).
    connection: { ...VECTOR_SEARCH_SETTINGS },
    // TCP keepalive notices a peer that vanished without closing (host down, network cut).
    keep_alive: 10,
    // Array types are never sent as arrays (textArrayLiteral): no catalogue query at each connect.
    fetch_types: false,
    // After a failed connection postgres.js waits before opening it again, by default up to 20 s
    // as failures add up: a three-second outage kept requests failing for ten more. At most 0.5 s.
    backoff: (retries: number) => Math.min(0.025 * 2 ** retries, 0.5),
    onnotice: () => undefined,
  });
  // drizzle hands dates to the driver as they are, and its date serialisers pass them through:
  // a raw `sql` template's Date (a period start) must go out as text.
  const serializers = client.options.serializers as Record<string, (value: unknown) => unknown>;
  const dateAsText = (value: unknown) => (value instanceof Date ? value.toISOString() : value);
  const db = drizzle(client) as unknown as Db;
  for (const type of ['1082', '1083', '1114', '1184', '1182', '1185', '1115', '1231']) serializers[type] = dateAsText;

  /**
   * Statements issued and not yet settled, with when they were issued: the pool's figures in
   * /metrics, and the bounds, which one sweep checks for all of them (a timer per statement cost
   * a burst of 1,000 sends measurable CPU). Its period is a quarter of the shorter bound, at most
   * 250 ms: a statement fails at most that long after its bound.
   */
  const inFlight = new Map<DriverQuery, number>();
  const sweepMs = Math.max(5, Math.min(250, Math.min(poolWaitMs, queryTimeoutMs) / 4));
  let sweeper: NodeJS.Timeout | undefined;
  /**
   * Fails a statement past a bound: its caller gets the error (503), and nothing else changes.
   * The statement is not withdrawn: postgres.js 3.4's `cancel()` strands a connection whose first
   * statement it is, hands the answers of a pipelined connection to the wrong statements when
   * the cancelled one was written but not yet running, and a cancel request reaches whatever the
   * backend runs by then. So a statement not yet sent still runs when a connection takes it, and
   * a sent one runs to its end; its answer is read and dropped.
   */
  const fail = (query: DriverQuery, message: string) => {
    inFlight.delete(query);
    query.reject(new Error(message));
  };
  const sweep = () => {
    const now = performance.now();
    for (const [query, issued] of inFlight) {
      const waited = now - issued;
      if (query.state === null && waited >= poolWaitMs) fail(query, POOL_WAIT_TIMEOUT);
      else if (waited >= queryTimeoutMs) fail(query, QUERY_TIMEOUT);
    }
    if (inFlight.size === 0) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };
  const bound = (query: DriverQuery, text: string, bounded: boolean): void => {
    const endSpan = tracingEnabled() ? startClientSpan(statementName(text), statementAttributes(text)) : undefined;
    if (bounded) {
      inFlight.set(query, performance.now());
      if (!sweeper) {
        sweeper = setInterval(sweep, sweepMs);
        sweeper.unref();
      }
    }
    const settle = (error?: unknown) => {
      inFlight.delete(query);
      endSpan?.(error);
    };
    // The driver's own `then`, which does not start the statement: settling is watched, not awaited.
    void Promise.prototype.then.call(query, () => settle(), settle);
  };
  /** Bounds, traces and reports every statement `sql.unsafe` issues (drizzle issues all of them through it). */
  const instrument = (sql: PostgresSql): PostgresSql => {
    const unsafe = sql.unsafe.bind(sql);
    sql.unsafe = ((text: string, params?: unknown[], queryOptions?: { prepare?: boolean; onexecute?: unknown }) => {
      reportStatement(text);
      // postgres.js sends an unprepared statement with parameters in two round trips (it asks the
      // server for the parameter types first), and holds the connection's pipeline meanwhile;
      // a prepared one goes in one. drizzle prepares only what it names, so every statement with
      // up to MAX_PREPARED_PARAMETERS parameters is prepared here (once per connection; the
      // connection's statements go with it after max_lifetime). Bulk inserts stay unprepared.
      const prepare = queryOptions?.prepare || (params !== undefined && params.length > 0 && params.length <= MAX_PREPARED_PARAMETERS);
      const query = (unsafe as unknown as (...args: unknown[]) => DriverQuery)(text, params ?? [], { ...queryOptions, prepare });
      // Bounded from now: the driver sends it when it is awaited, which its caller does at once.
      // Not a transaction's BEGIN (postgres.js marks it with `onexecute`): its connection is
      // reserved when it is written, and a BEGIN failed by us would leave that connection in a
      // transaction nobody ends. The statements inside a transaction are bounded; its COMMIT and
      // ROLLBACK postgres.js sends itself, past this wrapper.
      bound(query, text, queryOptions?.onexecute === undefined);
      return query;
    }) as unknown as typeof sql.unsafe;
    return sql;
  };
  instrument(client);
  // A transaction runs on a connection of its own, through a `sql` of its own: instrument that too.
  const begin = client.begin.bind(client) as (...args: unknown[]) => Promise<unknown>;
  (client as { begin: unknown }).begin = (...args: unknown[]) => {
    const last = args.length - 1;
    const work = args[last] as (sql: PostgresSql) => unknown;
    args[last] = (sql: PostgresSql) => work(instrumentScope(sql));
    return begin(...args);
  };
  const instrumentScope = (sql: PostgresSql): PostgresSql => {
    instrument(sql);
    const savepoint = (sql as { savepoint?: (...args: unknown[]) => Promise<unknown> }).savepoint?.bind(sql);
    if (savepoint) {
      (sql as unknown as { savepoint: unknown }).savepoint = (...args: unknown[]) => {
        const last = args.length - 1;
        const work = args[last] as (inner: PostgresSql) => unknown;
        args[last] = (inner: PostgresSql) => work(instrumentScope(inner));
        return savepoint(...args);
      };
    }
    return sql;
  };
  markPostgres(db);
  return {
    db,
    kind: 'pg',
    poolStats: () => {
      let waiting = 0;
      for (const query of inFlight.keys()) if (query.state === null) waiting += 1;
      const inUse = Math.min(max, inFlight.size - waiting);
      return { max, inUse, idle: max - inUse, waiting };
    },
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    close: () => client.end({ timeout: 5 }),
  };
}
