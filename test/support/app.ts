import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Logger } from 'pino';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config/env.js';
import { createDeps, type Deps, type DepsOverrides } from '../../src/deps.js';
import { createLogger } from '../../src/platform/logger.js';
import { recordResponses, writeDocumentOnce } from './api-coverage.js';
import { type TestDatabase, testDatabase, truncateAll } from './db.js';

export interface Caller {
  token: string;
}

export interface RequestOptions {
  as?: Caller | null;
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

export interface TestApp {
  app: FastifyInstance;
  deps: Deps;
  config: Config;
  database: TestDatabase;
  request(method: InjectOptions['method'], url: string, options?: RequestOptions): Promise<LightMyRequestResponse>;
  get(url: string, as?: Caller | null): Promise<LightMyRequestResponse>;
  post(url: string, body?: unknown, as?: Caller | null): Promise<LightMyRequestResponse>;
  put(url: string, body?: unknown, as?: Caller | null): Promise<LightMyRequestResponse>;
  patch(url: string, body?: unknown, as?: Caller | null): Promise<LightMyRequestResponse>;
  delete(url: string, as?: Caller | null, body?: unknown): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** The SECRET_KEY of test apps and of the real service processes tests start. */
export const TEST_SECRET_KEY = 'test-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz';

let appCounter = 0;

/** The configuration tests run with: quiet, a temporary DATA_DIR, Redis when TEST_REDIS_URL is set. */
export function testConfig(env: Record<string, string> = {}): Config {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'wsai-test-'));
  const redis = process.env.TEST_REDIS_URL;
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: dataDir,
    SECRET_KEY: TEST_SECRET_KEY,
    PUBLIC_BASE_URL: 'http://localhost:8000',
    // Each app its own Redis prefix, so a second app in a file never takes the first one's jobs;
    // tests that want two "processes" of one deployment pass the first app's REDIS_PREFIX.
    ...(redis
      ? { REDIS_URL: redis, REDIS_PREFIX: `wsai-test-${inject('testRunId')}-${process.env.VITEST_POOL_ID ?? '0'}-${++appCounter}` }
      : {}),
    ...env,
  });
}

/** Test-provided dependencies (the database is always this worker's). */
export type TestOverrides = Omit<DepsOverrides, 'database'>;

/**
 * Builds the real app on this worker's database. With `DATABASE_URL` in `env` (PostgreSQL only;
 * fault tests point it at a proxy in front of this worker's database) the app opens its own pool
 * from its configuration, as the server does, and closes it with the app. `startWorker: false`
 * leaves it without a job worker (an API process of the distributed profile).
 */
export async function createTestApp(
  env: Record<string, string> = {},
  overrides: TestOverrides = {},
  options: { log?: Logger; startWorker?: boolean } = {},
): Promise<TestApp> {
  const config = testConfig(env);
  const shared = env.DATABASE_URL ? undefined : await testDatabase();
  const log = options.log ?? createLogger(config.LOG_LEVEL);
  const deps = await createDeps(config, log, { ...overrides, ...(shared ? { database: shared } : {}) });
  const database: TestDatabase = shared ?? { ...deps.database, url: env.DATABASE_URL };
  const app = await buildApp(deps);
  recordResponses(app, inject('apiCoverageDir'));
  await app.ready();
  writeDocumentOnce(app, inject('apiCoverageDir'));
  // As in the embedded server: jobs run in this process, so tests can enqueue and `drain()`.
  if (options.startWorker ?? true) await deps.jobs.startWorker();

  const request: TestApp['request'] = (method, url, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.as) headers.authorization = `Bearer ${options.as.token}`;
    const hasBody = options.body !== undefined;
    return app.inject({
      method,
      url,
      headers,
      query: options.query,
      ...(hasBody ? { payload: options.body as InjectOptions['payload'] } : {}),
    });
  };

  return {
    app,
    deps,
    config,
    database,
    request,
    get: (url, as) => request('GET', url, { as }),
    post: (url, body, as) => request('POST', url, { body: body ?? {}, as }),
    put: (url, body, as) => request('PUT', url, { body: body ?? {}, as }),
    patch: (url, body, as) => request('PATCH', url, { body: body ?? {}, as }),
    delete: (url, as, body) => request('DELETE', url, { body, as }),
    async close() {
      await app.close();
      await deps.close();
      rmSync(config.DATA_DIR, { recursive: true, force: true });
    },
  };
}

/**
 * For tests that change credentials, workspaces or memberships in the database directly (an
 * expiry moved into the past, a workspace archived by SQL): the app's access cache would answer
 * from before the change for up to ACCESS_CACHE_TTL_SECONDS, as it would after an operator's
 * manual SQL. The service's own writers invalidate the cache themselves.
 */
export function forgetCachedAccess(...apps: TestApp[]): void {
  for (const app of apps) app.deps.accessCache.clear();
}

/**
 * Registers the hooks of a test file: one app for the file, empty tables before each test.
 * Use the returned object's fields inside tests (they are set in beforeAll).
 */
export function useTestApp(env: Record<string, string> = {}, overrides: TestOverrides = {}): TestApp {
  const holder = {} as TestApp;
  beforeAll(async () => {
    Object.assign(holder, await createTestApp(env, overrides));
  });
  beforeEach(async () => {
    await truncateAll(holder.database);
    // Ids start again after the truncation: nothing cached may survive into the next test.
    holder.deps.accessCache.clear();
    holder.deps.services.embeddings.forget();
  });
  afterAll(async () => {
    await holder.close?.();
  });
  return holder;
}
