import { loadConfig } from '../config/env.js';
import { openDatabase } from './client.js';
import { runMigrations } from './migrate.js';

/** `npm run migrate`: applies the committed migrations to DATABASE_URL (or the PGlite DATA_DIR). */
const config = loadConfig();
const database = await openDatabase({ url: config.DATABASE_URL, pgliteDir: `${config.DATA_DIR}/db` });
await runMigrations(database, config.DATABASE_URL);
await database.close();
process.stdout.write(`migrations applied (${database.kind})\n`);
