import type { Logger } from 'pino';
import type { Config } from './config/env.js';
import { type Database, openDatabase } from './db/client.js';
import { runMigrations } from './db/migrate.js';
import { createOutboxMailer } from './platform/mail/outbox.js';
import type { Mailer } from './platform/mail/port.js';
import { createMetrics, type Metrics } from './platform/metrics.js';
import { createAuthService } from './modules/auth/auth.service.js';
import { createUsersService } from './modules/users/users.service.js';
import { createMembershipsService } from './modules/workspaces/memberships.service.js';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.js';

/**
 * The composition root: every adapter is chosen here, once, from configuration, and every
 * service receives exactly the dependencies it uses. Tests call `createDeps` with their own
 * config and may pass an already-open database.
 */
export interface Deps {
  config: Config;
  log: Logger;
  database: Database;
  mailer: Mailer;
  metrics: Metrics;
  services: ReturnType<typeof createServices>;
  close(): Promise<void>;
}

export interface DepsOverrides {
  /** An open, migrated database (tests share one per worker); it is not closed by `close()`. */
  database?: Database;
}

function createServices(base: Pick<Deps, 'config' | 'log' | 'database' | 'mailer'>) {
  const { config, log, database, mailer } = base;
  const db = database.db;
  return {
    auth: createAuthService({ db, config, mailer, log: log.child({ module: 'auth' }) }),
    users: createUsersService({ db }),
    workspaces: createWorkspacesService({ db }),
    memberships: createMembershipsService({ db }),
  };
}

export async function createDeps(config: Config, log: Logger, overrides: DepsOverrides = {}): Promise<Deps> {
  const ownsDatabase = !overrides.database;
  const database =
    overrides.database ??
    (await openDatabase({
      url: config.DATABASE_URL,
      pgliteDir: `${config.DATA_DIR}/db`,
      poolSize: config.DATABASE_POOL_SIZE,
    }));
  if (ownsDatabase) await runMigrations(database, config.DATABASE_URL);

  const mailer = createOutboxMailer(database.db, log.child({ module: 'mail' }));
  const metrics = createMetrics();
  const base = { config, log, database, mailer };
  return {
    ...base,
    metrics,
    services: createServices(base),
    async close() {
      await mailer.close();
      if (ownsDatabase) await database.close();
    },
  };
}
