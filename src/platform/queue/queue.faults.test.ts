import { Redis } from 'ioredis';
import { inArray } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/support/app.js';
import { truncateAll } from '../../../test/support/db.js';
import { docsBase, LIFTED_THROTTLES, type LocalSite, startLocalSite } from '../../../test/support/documents.js';
import { newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { documents, ingestionTasks } from '../../modules/documents/documents.table.js';
import { backgroundJobs } from './jobs.table.js';
import { sleep, waitUntil } from '../../../test/support/wait.js';

/**
 * The queue's Redis goes away or loses its data (Redis profile only; a private redis-server the
 * test stops, starts and flushes, never the machine's Redis). Imports are recorded in the
 * database either way and complete once a worker and Redis are there: nothing is lost, nothing
 * hangs.
 */

const PAGES = 8;


describe.skipIf(!process.env.TEST_REDIS_URL || !hasRedisServer)('the queue when Redis fails', () => {
  let redis: RedisServer;
  let site: LocalSite;
  const apps: TestApp[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    redis = await startRedisServer();
    site = await startLocalSite();
    for (let i = 0; i < PAGES; i += 1) {
      site.routes.set(`/page-${i}`, (_req, res) => {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<html><body><p>Harbour note ${i}: the ferry left on time.</p></body></html>`);
        }, 300);
      });
    }
    env = {
      ...LIFTED_THROTTLES,
      URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32',
      REDIS_URL: redis.url,
      JOB_RECONCILE_INTERVAL_SECONDS: '0.5',
      JOB_DELIVERY_GRACE_SECONDS: '1',
      WORKER_CONCURRENCY: '1',
    };
  });

  afterEach(async () => {
    redis.resume();
    await redis.start();
    for (const app of apps.splice(0)) await app.close();
  });

  afterAll(async () => {
    await redis?.close();
    await site?.close();
  });

  /** An app with its worker on the private Redis, empty tables, an owner and a workspace. */
  async function world() {
    const t = await createTestApp(env);
    apps.push(t);
    await truncateAll(t.database);
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    return { t, owner, ws };
  }

  async function importPages(t: TestApp, owner: TestUser, wsId: string, maxMs = 2000) {
    const ids: string[] = [];
    for (let i = 0; i < PAGES; i += 1) {
      const started = Date.now();
      const res = await t.post(`${docsBase(wsId)}from-url/`, { url: `${site.url}/page-${i}` }, owner);
      const ms = Date.now() - started;
      expect(res.statusCode, res.body).toBe(202);
      expect(ms, `from-url/ took ${ms} ms`).toBeLessThan(maxMs);
      ids.push(res.json().document.id as string);
    }
    return ids;
  }

  async function allReady(t: TestApp, ids: string[], boundMs: number) {
    const started = Date.now();
    for (;;) {
      const tasks = await t.deps.database.db.select().from(ingestionTasks).where(inArray(ingestionTasks.documentId, ids));
      if (tasks.length === ids.length && tasks.every((task) => task.status === 'SUCCESS')) break;
      if (Date.now() - started > boundMs) throw new Error(`not all imports completed in ${boundMs} ms: ${JSON.stringify(tasks.map((x) => x.status))}`);
      await sleep(100);
    }
    const docs = await t.deps.database.db.select().from(documents).where(inArray(documents.id, ids));
    expect(docs.map((d) => d.processingStatus)).toEqual(ids.map(() => 'ready'));
    return Date.now() - started;
  }

  it('with Redis down, from-url/ still answers 202 within 2 s; the imports run once Redis is back', { timeout: 60_000 }, async () => {
    const { t, owner, ws } = await world();
    await redis.stop();
    const ids = await importPages(t, owner, ws.id);
    // Recorded, not delivered: each failed dispatch set the outbox mark.
    await waitUntil(async () => {
      const rows = await t.deps.database.db.select().from(backgroundJobs);
      return rows.length === PAGES && rows.every((r) => r.state === 'queued' && r.deliveredAt === null);
    });
    expect((await t.get('/readyz')).json().checks.redis).toBe('failed');

    await redis.start();
    const ms = await allReady(t, ids, 30_000);
    expect(ms).toBeLessThan(30_000);
  });

  it('with Redis hung (no answer at all), from-url/ still answers within 2 s', { timeout: 60_000 }, async () => {
    const { t, owner, ws } = await world();
    redis.pause();
    const ids = await importPages(t, owner, ws.id, 2200);
    redis.resume();
    await allReady(t, ids, 30_000);
  });

  it('Redis restarted empty while imports wait, with the worker running: every import completes', { timeout: 60_000 }, async () => {
    const { t, owner, ws } = await world();
    const ids = await importPages(t, owner, ws.id);
    // One runs (concurrency 1, each page takes 300 ms); the others wait in Redis.
    const client = new Redis(redis.url);
    const waiting = await client.zcard(`${t.config.REDIS_PREFIX}:jobs:wait`).catch(() => 0);
    const listed = await client.llen(`${t.config.REDIS_PREFIX}:jobs:wait`).catch(() => 0);
    expect(waiting + listed).toBeGreaterThan(0);
    await client.flushall();
    await client.quit();
    const ms = await allReady(t, ids, 30_000);
    const redriven = (await t.deps.database.db.select().from(backgroundJobs)).reduce((sum, r) => sum + r.redriven, 0);
    expect(redriven).toBeGreaterThan(0);
    expect(ms).toBeLessThan(30_000);
  });

  it('Redis stopped and started empty while imports wait: every import completes without a restart', { timeout: 60_000 }, async () => {
    const { t, owner, ws } = await world();
    const ids = await importPages(t, owner, ws.id);
    await redis.stop();
    await sleep(500);
    await redis.start();
    await allReady(t, ids, 30_000);
  });
});
