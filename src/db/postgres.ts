import type { drizzle as drizzlePgType } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import { type Database, type DatabaseOptions, type Db, VECTOR_SEARCH_SETTINGS } from './client.js';
import { createStatementBatcher } from './statement-batch.js';
import { attachBatcher, markPostgres, traceQueries } from './statements.js';

/** Longest wait for a lock on the batch connection (see the batcher below). */
const BATCH_LOCK_TIMEOUT_MS = 1000;

/**
 * PostgreSQL through node-postgres: a pool with bounded waits. When PostgreSQL goes away, the
 * clients whose connections broke are dropped from the pool (pg-pool removes a client that
 * errors, idle or busy) and the next query opens a new connection, so the service recovers by
 * itself once the server is back.
 *
 * (postgres.js, which pipelines, was used for a while and measured cheaper under a burst; it was
 * taken out for defects of its current release that can lose writes and hand one caller's rows to
 * another: docs/decisions.md, "The driver".)
 */
export function openPostgres(
  { pg: driver, drizzlePg }: { pg: typeof pg; drizzlePg: typeof drizzlePgType },
  url: string,
  options: DatabaseOptions,
): Database {
  const connectTimeoutMs = options.connectTimeoutMs ?? 2000;
  // pg-pool uses one setting for both waits: the pool's is the queue's, each client's its connect.
  class TimedClient extends driver.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
    }
  }
  const connection = {
    connectionString: url,
    // Set at connection start: no round trip (a connection string's own `options` takes precedence).
    options: Object.entries(VECTOR_SEARCH_SETTINGS)
      .map(([name, value]) => `-c ${name}=${value}`)
      .join(' '),
    query_timeout: options.queryTimeoutMs ?? 30_000,
    // TCP keepalive notices a peer that vanished without closing (host down, network cut).
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
  const pool = new driver.Pool({
    ...connection,
    Client: TimedClient,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: Math.max(options.poolWaitMs ?? 10_000, connectTimeoutMs),
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => undefined);
  traceQueries(pool);
  // Drizzle runs transactions on a client checked out with connect(): its queries are traced too.
  // (pool.query checks a client out with a callback, which passes through untraced: each
  // statement is counted once.)
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  pool.connect = (async (...args: unknown[]) => {
    if (args.length > 0) return (connect as (...a: unknown[]) => unknown)(...args);
    const client = await connect();
    traceQueries(client);
    return client;
  }) as typeof pool.connect;
  const db = drizzlePg(pool) as unknown as Db;
  markPostgres(db);
  // Group commit for the statements that ask for it (preparedStatement's `batched`), on one more
  // connection than the pool's. Everything queued on it waits behind a statement that waits for a
  // lock: past BATCH_LOCK_TIMEOUT_MS that statement's batch runs again alone on the pool instead
  // (an `options` in DATABASE_URL replaces these settings, this one too).
  const batcher = createStatementBatcher({
    connect: async () => {
      const client = new TimedClient({
        ...connection,
        options: `${connection.options} -c lock_timeout=${BATCH_LOCK_TIMEOUT_MS}`,
        pipeline: true,
      } as pg.ClientConfig);
      await client.connect();
      return traceQueries(client);
    },
    runAlone: (config) => pool.query(config),
  });
  attachBatcher(db, batcher);
  const max = options.poolSize ?? 10;
  return {
    db,
    kind: 'pg',
    poolStats: () => ({ max, inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    ping: async () => {
      await pool.query('select 1');
    },
    close: async () => {
      await batcher.close();
      await pool.end();
    },
  };
}
