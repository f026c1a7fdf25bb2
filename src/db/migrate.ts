import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import type { Database } from './client.js';

/** Finds the committed `drizzle/` folder from both `src/` (tsx, tests) and `dist/src/` (built). */
export function migrationsFolder(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'drizzle');
    if (existsSync(path.join(candidate, 'meta', '_journal.json'))) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error('drizzle/ migrations folder not found');
}

// Any constant works; it only has to be the same in every process of the service.
const MIGRATION_LOCK_KEY = 7_305_112_019;

/**
 * Applies the committed migrations. drizzle-kit never emits `CREATE EXTENSION`, so pgvector is
 * enabled first. On PostgreSQL an advisory lock keeps two starting processes from racing.
 */
export async function runMigrations(database: Database, url?: string): Promise<void> {
  const migrationsDir = migrationsFolder();
  if (database.kind === 'pglite') {
    await database.db.execute(sql`CREATE EXTENSION IF NOT EXISTS vector`);
    await migratePglite(database.db as unknown as PgliteDatabase, { migrationsFolder: migrationsDir });
    return;
  }
  if (!url) throw new Error('runMigrations needs the connection URL on PostgreSQL');
  // Loaded only on PostgreSQL, like the driver in client.ts.
  const [{ default: pg }, { drizzle: drizzlePg }, { migrate: migratePg }] = await Promise.all([
    import('pg'),
    import('drizzle-orm/node-postgres'),
    import('drizzle-orm/node-postgres/migrator'),
  ]);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query('CREATE EXTENSION IF NOT EXISTS vector');
    await migratePg(drizzlePg(client), { migrationsFolder: migrationsDir });
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}
