import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { bundleService } from '../../scripts/bundle.mjs';
import { openDatabase } from '../../src/db/client.js';
import { runMigrations } from '../../src/db/migrate.js';
import { undocumentedStatuses } from './api-coverage.js';
import { deleteKeys } from './redis.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * On PostgreSQL (TEST_DATABASE_URL set) one template database is migrated once per run; every
 * worker clones it (CREATE DATABASE ... TEMPLATE), which is much faster than migrating again.
 * Run ids keep concurrent runs on one server apart. On PGlite each worker migrates its own.
 */
export default async function setup(project: TestProject) {
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  project.provide('testRunId', runId);
  // The service processes tests start (test/support/processes.ts) run bundled, as `npm start` and
  // `npm run worker` do, by the build's own bundler (scripts/bundle.mjs), here from the sources.
  // Inside the project, so the bundle's external packages resolve from its node_modules/.
  const bundleDir = path.join(ROOT, '.test-bundles', runId);
  await bundleService({ root: ROOT, entryPoints: { server: 'src/server.ts', worker: 'src/worker.ts' }, outdir: bundleDir });
  process.env.WSAI_TEST_BUNDLE_DIR = bundleDir;
  const removeBundle = () => rmSync(bundleDir, { recursive: true, force: true });
  // What every test app answered, compared with the OpenAPI document at the end (api-coverage.ts).
  const apiCoverageDir = path.join(tmpdir(), `wsai-api-coverage-${runId}`);
  project.provide('apiCoverageDir', apiCoverageDir);
  const checkApiCoverage = () => {
    const problems = undocumentedStatuses(apiCoverageDir);
    rmSync(apiCoverageDir, { recursive: true, force: true });
    if (problems.length) {
      // Vitest reports an error thrown here but still exits 0: the exit code makes the run fail.
      process.exitCode = 1;
      throw new Error(
        `The OpenAPI document lacks ${problems.length} status(es) the suite saw (add them to the route's *.docs.ts):\n  ` +
          problems.join('\n  '),
      );
    }
  };
  const redisUrl = process.env.TEST_REDIS_URL;
  // Test apps use REDIS_PREFIX wsai-test-<runId>-<worker> (test/support/app.ts): remove their keys.
  const cleanRedis = redisUrl ? () => deleteKeys(redisUrl, `wsai-test-${runId}-`) : async () => {};
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    return async () => {
      removeBundle();
      await cleanRedis();
      checkApiCoverage();
    };
  }

  const template = `wsai_test_${runId}_tpl`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${template}"`);
  const templateUrl = withDatabase(url, template);
  const database = await openDatabase({ url: templateUrl, poolSize: 1 });
  await runMigrations(database, templateUrl);
  await database.close();
  await admin.end();

  return async () => {
    const cleanup = new pg.Client({ connectionString: url });
    await cleanup.connect();
    const { rows } = await cleanup.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1`,
      [`wsai_test_${runId}_%`],
    );
    for (const { datname } of rows) await cleanup.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    await cleanup.end();
    removeBundle();
    await cleanRedis();
    checkApiCoverage();
  };
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

declare module 'vitest' {
  export interface ProvidedContext {
    testRunId: string;
    apiCoverageDir: string;
  }
}
