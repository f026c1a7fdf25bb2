import type { Config } from '../config/env.js';
import { type Database, type DatabaseOptions, openDatabase } from './client.js';
import { runMigrations } from './migrate.js';

/**
 * The service's own database as configured (PostgreSQL at DATABASE_URL, else PGlite in
 * DATA_DIR/db), opened and migrated. `createDeps` calls it; server.ts calls it first and hands
 * the promise over, so PGlite's start (its WASM instance, the slowest step of start-up) runs
 * while the rest of the service is still being loaded.
 */
export async function openServiceDatabase(config: Config, options: Pick<DatabaseOptions, 'onStopped'> = {}): Promise<Database> {
  const database = await openDatabase({
    ...options,
    url: config.DATABASE_URL,
    pgliteDir: `${config.DATA_DIR}/db`,
    pgliteSharedBuffersMb: config.EMBEDDED_DB_SHARED_BUFFERS_MB,
    poolSize: config.DATABASE_POOL_SIZE,
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    poolWaitMs: config.DATABASE_POOL_WAIT_MS,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
  });
  await runMigrations(database, config.DATABASE_URL);
  return database;
}
