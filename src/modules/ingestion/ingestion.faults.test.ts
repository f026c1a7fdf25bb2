import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/support/app.js';
import { truncateAll } from '../../../test/support/db.js';
import { docsBase, LIFTED_THROTTLES, type LocalSite, startLocalSite } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { type ServiceProcess, spawnService } from '../../../test/support/processes.js';
import { freePort } from '../../../test/support/redis-server.js';
import { testRedisUrl } from '../../../test/support/redis.js';
import { backgroundJobs } from '../../platform/queue/jobs.table.js';
import { creditUsage } from '../billing/billing.table.js';
import { documentChunks, documents, ingestionTasks } from '../documents/documents.table.js';
import { sleep, waitUntil } from '../../../test/support/wait.js';

/**
 * Crash safety on the distributed profile with real processes: an API app without a worker
 * queues URL imports; `npm run worker` processes (src/worker.ts under tsx) are killed with SIGKILL
 * again and again while they ingest. Every task must end terminal within the bound, its document
 * agreeing with it, with at most one embedding charge per task (exactly one when it succeeded).
 */

const DOCUMENTS = 24;
const KILLS = 8;
/** The bound the test holds the service to, from the last worker's start (production: 2 min). */
const BOUND_MS = 60_000;

const distributed = Boolean(process.env.TEST_DATABASE_URL && testRedisUrl);

describe.skipIf(!distributed)('worker processes killed with SIGKILL during ingestion', () => {
  let site: LocalSite;
  let fake: FakeModelServer;
  let api: TestApp;
  let env: Record<string, string>;
  const workers: ServiceProcess[] = [];

  beforeAll(async () => {
    site = await startLocalSite();
    // Each page takes a while to answer, so kills land while imports run.
    for (let i = 0; i < DOCUMENTS; i += 1) {
      site.routes.set(`/page-${i}`, (_req, res) => {
        setTimeout(() => {
          res
            .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
            .end(`<html><head><title>Page ${i}</title></head><body><article><p>Lighthouse keeper log number ${i}: the lamp was lit at dusk and the fog horn sounded twice.</p></article></body></html>`);
        }, 700);
      });
    }
    fake = await startFakeModelServer();
    env = {
      ...LIFTED_THROTTLES,
      ...fake.env,
      EMBEDDING_MODEL: 'openai:text-embedding-3-small',
      URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32',
      REDIS_PREFIX: `wsai-test-faults-${randomBytes(4).toString('hex')}`,
      JOB_LEASE_SECONDS: '3',
      JOB_RECONCILE_INTERVAL_SECONDS: '0.5',
      JOB_DELIVERY_GRACE_SECONDS: '2',
      INGESTION_RETRY_BACKOFF_MS: '200',
      WORKER_CONCURRENCY: '4',
    };
    api = await createTestApp(env, {}, { startWorker: false });
    await truncateAll(api.database);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await api?.close();
    await fake?.close();
    await site?.close();
  });

  const workerEnv = () => ({
    ...env,
    // Every claim and stale delivery is logged, for the diagnosis when the test fails.
    LOG_LEVEL: 'debug',
    DATABASE_URL: api.database.url!,
    REDIS_URL: testRedisUrl!,
    SECRET_KEY: api.config.SECRET_KEY!,
    DATA_DIR: api.config.DATA_DIR,
    PUBLIC_BASE_URL: api.config.publicBaseUrl,
  });

  it('every task ends terminal within the bound, statuses agree, and each task is charged at most once', { timeout: 240_000 }, async () => {
    const owner = await newUser(api);
    const ws = await newWorkspace(api, owner);
    const documentIds: string[] = [];
    for (let i = 0; i < DOCUMENTS; i += 1) {
      const res = await api.post(`${docsBase(ws.id)}from-url/`, { url: `${site.url}/page-${i}` }, owner);
      expect(res.statusCode, res.body).toBe(202);
      documentIds.push(res.json().document.id);
    }

    for (let kill = 0; kill < KILLS; kill += 1) {
      const worker = spawnService('worker', workerEnv());
      workers.push(worker);
      await worker.ready;
      await sleep(400 + Math.random() * 900);
      await worker.stop('SIGKILL');
    }
    const metricsPort = await freePort();
    const last = spawnService('worker', { ...workerEnv(), WORKER_METRICS_PORT: String(metricsPort) });
    workers.push(last);
    await last.ready;
    const startedAt = Date.now();

    const db = api.database.db;
    const tasks = () => db.select().from(ingestionTasks).where(inArray(ingestionTasks.documentId, documentIds));
    for (;;) {
      const open = (await tasks()).filter((t) => !['SUCCESS', 'FAILURE'].includes(t.status));
      if (open.length === 0) break;
      if (Date.now() - startedAt > BOUND_MS) {
        const jobs = await db.select().from(backgroundJobs).where(inArray(backgroundJobs.id, open.map((t) => t.id)));
        const lines = workers.flatMap((w, i) =>
          w.output().split('\n').filter((line) => open.some((t) => line.includes(t.id))).map((line) => `worker ${i} (pid ${w.pid}): ${line}`),
        );
        throw new Error(
          `${open.length} tasks still open after ${BOUND_MS} ms: ${JSON.stringify(open)}\njobs: ${JSON.stringify(jobs)}\n${lines.join('\n')}`,
        );
      }
      await sleep(200);
    }
    const elapsed = Date.now() - startedAt;

    const finalTasks = await tasks();
    expect(finalTasks).toHaveLength(DOCUMENTS);
    const docs = await db.select().from(documents).where(inArray(documents.id, documentIds));
    const charges = await db.select().from(creditUsage).where(eq(creditUsage.workspaceId, ws.id));
    const chargesByTask = new Map<string, number>();
    for (const charge of charges) chargesByTask.set(charge.referenceId, (chargesByTask.get(charge.referenceId) ?? 0) + 1);
    for (const task of finalTasks) {
      const document = docs.find((d) => d.id === task.documentId)!;
      // The document agrees with its task.
      expect(document.processingStatus).toBe(task.status === 'SUCCESS' ? 'ready' : 'failed');
      const charged = chargesByTask.get(`embedding:${task.id}`) ?? 0;
      if (task.status === 'SUCCESS') {
        expect(charged).toBe(1);
        const chunks = await db.select().from(documentChunks).where(eq(documentChunks.documentId, document.id));
        expect(chunks).toHaveLength(1);
      } else {
        expect(charged).toBeLessThanOrEqual(1);
        expect(task.errorMessage).toMatch(/could not be processed/);
      }
    }
    // Every charge belongs to one of these tasks: no attempt-scoped reference ids.
    expect(charges.every((c) => /^embedding:[0-9a-f-]{36}$/.test(c.referenceId))).toBe(true);
    expect(charges.length).toBe(chargesByTask.size);
    // The kills really stranded runs, and the reconciler re-drove them.
    const [totals] = await db.select({ redriven: sql<number>`sum(${backgroundJobs.redriven})::int` }).from(backgroundJobs);
    const redriven = totals!.redriven;
    expect(redriven).toBeGreaterThan(0);
    const succeeded = finalTasks.filter((t) => t.status === 'SUCCESS').length;
    process.stdout.write(`SIGKILL x${KILLS}: ${succeeded}/${DOCUMENTS} succeeded, ${redriven} re-drives, all terminal ${elapsed} ms after the last start\n`);
    expect(succeeded).toBeGreaterThanOrEqual(DOCUMENTS / 2);
    expect(elapsed).toBeLessThan(BOUND_MS);
    // The surviving worker takes new work too (the kills may have left it nothing to run, so its
    // own counters are checked after one more import).
    const extra = await api.post(`${docsBase(ws.id)}from-url/`, { url: `${site.url}/page-0` }, owner);
    expect(extra.statusCode, extra.body).toBe(202);
    const extraId: string = extra.json().document.id;
    await waitUntil(
      async () => {
        const [task] = await db.select().from(ingestionTasks).where(eq(ingestionTasks.documentId, extraId));
        return task?.status === 'SUCCESS';
      },
      30_000,
    );
    // The worker's own metrics: what it ran and re-drove, and the queue as the database sees it.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/queue_jobs_completed_total\{queue="documents.ingest"\} [1-9]/);
    expect(metrics).toContain('queue_jobs{queue="documents.ingest",state="waiting"} 0');
    expect(metrics).toContain('queue_workers_live 1');
    expect(metrics).toMatch(/queue_job_duration_seconds_bucket\{le="[\d.]+",queue="documents.ingest",outcome="completed"\}/);
    await last.stop('SIGTERM');
    expect(await last.exited).toBe(0);
  });
});

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('the embedded process killed with SIGKILL during ingestion', () => {
  let site: LocalSite;
  let dataDir: string;
  const servers: ServiceProcess[] = [];

  beforeAll(async () => {
    site = await startLocalSite();
    for (let i = 0; i < 8; i += 1) {
      site.routes.set(`/page-${i}`, (_req, res) => {
        setTimeout(() => {
          res
            .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
            .end(`<html><head><title>Page ${i}</title></head><body><article><p>Tide table ${i}: high water at noon, low water at dusk.</p></article></body></html>`);
        }, 1500);
      });
    }
    dataDir = mkdtempSync(path.join(tmpdir(), 'wsai-embedded-'));
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await site?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('after a restart on the same DATA_DIR every task completes', { timeout: 180_000 }, async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      ...LIFTED_THROTTLES,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32',
      WORKER_CONCURRENCY: '2',
      JOB_RECONCILE_INTERVAL_SECONDS: '1',
    };
    const call = async (method: string, url: string, body?: unknown, token?: string) => {
      const res = await fetch(`${base}${url}`, {
        method,
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
    };

    const first = spawnService('server', env);
    servers.push(first);
    await first.ready;
    expect((await call('POST', '/auth/users/', { email: 'keeper@example.com', password: 'lighthouse-keeper-1', name: 'Keeper' })).status).toBe(201);
    const token = (await call('POST', '/auth/token/login/', { email: 'keeper@example.com', password: 'lighthouse-keeper-1' })).body.auth_token as string;
    const ws = (await call('POST', '/api/workspaces/', { name: 'Coast' }, token)).body.id as string;
    const ids: string[] = [];
    for (let i = 0; i < 8; i += 1) {
      const res = await call('POST', `/api/workspaces/${ws}/documents/from-url/`, { url: `${site.url}/page-${i}` }, token);
      expect(res.status).toBe(202);
      ids.push(res.body.document.id as string);
    }
    const statuses = async () =>
      Promise.all(ids.map(async (id) => (await call('GET', `/api/workspaces/${ws}/documents/${id}/processing-status/`, undefined, token)).body));
    // Kill it while imports run (two at a time, 1.5 s each).
    for (;;) {
      if ((await statuses()).some((s) => s.processing_status === 'processing')) break;
      await sleep(100);
    }
    await first.stop('SIGKILL');

    const second = spawnService('server', env);
    servers.push(second);
    await second.ready;
    const restartedAt = Date.now();
    let last: Array<Record<string, any>> = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    while (Date.now() - restartedAt < 60_000) {
      last = await statuses();
      if (last.every((s) => s.processing_status === 'ready' && s.task.status === 'SUCCESS')) break;
      await sleep(250);
    }
    expect(last.map((s) => [s.processing_status, s.task.status])).toEqual(ids.map(() => ['ready', 'SUCCESS']));
    await second.stop('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
