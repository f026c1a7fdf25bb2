import { randomUUID } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../test/support/app.js';
import { truncateAll } from '../../test/support/db.js';
import { s3StorageEnv, startTestS3, type TestS3 } from '../../test/support/s3.js';
import { loadConfig } from '../config/env.js';
import { testRedisUrl } from '../../test/support/redis.js';
import { backgroundJobs } from './queue/jobs.table.js';

/** The composition root picks every adapter from configuration, and /readyz checks them. */

describe('an API process without a worker', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(
      { RUN_WORKER_IN_PROCESS: 'false', JOB_WAIT_ALERT_SECONDS: '30', METRICS_TOKEN: 'metrics-token-0123456789' },
      {},
      { startWorker: false },
    );
    // The database is shared with the test files this worker ran before: start from no jobs.
    await truncateAll(t.database);
  });
  afterAll(async () => {
    await t.close();
  });

  it('reports in /readyz and /metrics when jobs wait with no live worker, and recovers once one runs', async () => {
    const job = await t.deps.jobs.enqueue('documents.ingest', { taskId: randomUUID() });
    expect((await t.get('/readyz')).json().checks.workers).toBe('ok');
    // The job has waited longer than JOB_WAIT_ALERT_SECONDS.
    await t.deps.database.db.update(backgroundJobs).set({ runAfter: sql`now() - interval '31 seconds'` });
    const unready = await t.get('/readyz');
    expect(unready.statusCode).toBe(503);
    expect(unready.json()).toMatchObject({ status: 'unavailable', checks: { workers: 'failed', database: 'ok' } });
    const metrics = (await t.request('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } })).body;
    expect(metrics).toContain('queue_jobs{queue="documents.ingest",state="waiting"} 1');
    expect(metrics).toMatch(/queue_oldest_waiting_seconds\{queue="documents.ingest"\} 3\d/);
    expect(metrics).toContain('queue_workers_live 0');

    await t.deps.jobs.startWorker();
    await t.deps.jobs.drain();
    const ready = await t.get('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks.workers).toBe('ok');
    // The task id named no task: the job completes without doing anything.
    const [row] = await t.deps.database.db.select().from(backgroundJobs).where(eq(backgroundJobs.id, job.id));
    expect(row).toMatchObject({ id: job.id, state: 'done' });
  });
});

describe('default infrastructure', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('uses Redis-backed adapters exactly when REDIS_URL is set, local storage and the outbox mailer', () => {
    const redis = Boolean(testRedisUrl);
    expect(t.deps.queue.kind).toBe(redis ? 'bullmq' : 'memory');
    expect(t.deps.pubsub.kind).toBe(redis ? 'redis' : 'memory');
    expect(t.deps.limiter.kind).toBe(redis ? 'redis' : 'memory');
    expect(t.deps.storage.kind).toBe('local');
    expect(t.deps.mailer.kind).toBe('log');
    expect(t.deps.jobs.queue).toBe(t.deps.queue);
  });

  it('reports database, storage and (when configured) Redis in /readyz', async () => {
    const res = await t.get('/readyz');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ok',
      checks: { database: 'ok', storage: 'ok', ...(testRedisUrl ? { redis: 'ok', workers: 'ok' } : {}) },
    });
  });

  it('serves the local storage routes without authentication', async () => {
    const res = await t.request('GET', '/files/download/ws/1/x?fn=x&exp=1&sig=x');
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'invalid_signature' });
  });
});

describe('S3 storage and SMTP configured', () => {
  let s3: TestS3;
  let t: TestApp;
  beforeAll(async () => {
    s3 = await startTestS3();
    t = await createTestApp({
      ...s3StorageEnv(s3),
      SMTP_URL: 'smtp://127.0.0.1:2525',
    });
  });
  afterAll(async () => {
    await t?.close();
    await s3?.close();
  });

  it('uses the S3 adapter, checks the bucket in /readyz and does not mount the local routes', async () => {
    expect(t.deps.storage.kind).toBe('s3');
    expect(t.deps.mailer.kind).toBe('smtp');
    expect((await t.get('/readyz')).json().checks.storage).toBe('ok');
    expect((await t.request('GET', '/files/download/ws/1/x?fn=x&exp=1&sig=x')).statusCode).toBe(404);
  });
});

describe('throttle settings', () => {
  it('are checked with the rate limiter parser at start-up', () => {
    expect(() => loadConfig({ THROTTLE_CHAT_MESSAGES: '0/minute' })).toThrow(/THROTTLE_CHAT_MESSAGES: .*at least 1/);
    expect(() => loadConfig({ THROTTLE_TRANSLATIONS: '20/fortnight' })).toThrow(/THROTTLE_TRANSLATIONS: .*period/);
    expect(loadConfig({ THROTTLE_DOCUMENT_UPLOADS: '5/h' }).THROTTLE_DOCUMENT_UPLOADS).toBe('5/h');
  });
});
