import { inArray } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../test/support/app.js';
import { chatWorld, deltaText, listenUrl, messageRows, openHttpStream } from '../../test/support/chat.js';
import { waitUntil } from '../../test/support/wait.js';
import { truncateAll, workerDatabaseUrlVia } from '../../test/support/db.js';
import { LIFTED_THROTTLES, type LocalSite, startLocalSite } from '../../test/support/documents.js';
import { newUser, newWorkspace, TEST_PASSWORD, type TestUser, type TestWorkspace } from '../../test/support/factories.js';
import { type FakeModelServer, startFakeModelServer } from '../../test/support/fake-model-server.js';
import { captureLog, type CapturedLog } from '../../test/support/log.js';
import { startTcpProxy, type TcpProxy } from '../../test/support/tcp-proxy.js';
import { documents, ingestionTasks } from '../modules/documents/documents.table.js';
import { GENERIC_MODEL_FAILURE } from '../modules/messages/messages.service.js';
import { SERVICE_UNAVAILABLE_DETAIL } from './errors.js';

/**
 * PostgreSQL goes away (PostgreSQL profile only): the app's pool reaches this worker's database
 * through a TCP proxy, and stopping the proxy refuses new connections and breaks the open ones,
 * as a stopped or unreachable server does. The shared server itself is never touched.
 */
const baseUrl = process.env.TEST_DATABASE_URL;

describe.skipIf(!baseUrl)('PostgreSQL unreachable', () => {
  let proxy: TcpProxy;
  let fake: FakeModelServer;
  let captured: CapturedLog;
  let t: TestApp;

  beforeAll(async () => {
    const server = new URL(baseUrl!);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    fake = await startFakeModelServer();
    captured = captureLog('info');
    const url = (await workerDatabaseUrlVia('127.0.0.1', proxy.port))!;
    t = await createTestApp(
      { ...fake.env, DATABASE_URL: url, THROTTLE_CHAT_MESSAGES: '10000/minute', LOG_LEVEL: 'info' },
      {},
      { log: captured.log },
    );
  });

  afterAll(async () => {
    await proxy?.start();
    await t?.close();
    await proxy?.close();
    await fake?.close();
  });

  beforeEach(async () => {
    await proxy.start();
    fake.reset();
  });

  /** A request with its duration. */
  async function timed(send: () => Promise<{ statusCode: number }>) {
    const started = Date.now();
    const res = await send();
    return { res: res as Awaited<ReturnType<TestApp['get']>>, ms: Date.now() - started };
  }

  function expectUnavailable(res: Awaited<ReturnType<TestApp['get']>>, ms: number, what: string) {
    expect(res.statusCode, `${what}: ${res.body}`).toBe(503);
    expect(res.json()).toEqual({ detail: SERVICE_UNAVAILABLE_DETAIL, code: 'service_unavailable' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(ms, `${what} took ${ms} ms`).toBeLessThan(2500);
  }

  it('answers 503 with Retry-After at once while refused, logs no SQL, and recovers without a restart', async () => {
    const owner: TestUser = await newUser(t);
    const ws: TestWorkspace = await newWorkspace(t, owner, 'Outage');
    const requests = {
      'list workspaces': () => t.get('/api/workspaces/', owner),
      'create a chat': () => t.post(`/api/workspaces/${ws.id}/chats/`, { name: 'During the outage' }, owner),
      login: () => t.post('/auth/token/login/', { email: owner.email, password: TEST_PASSWORD }),
      'who am I': () => t.get('/api/users/me/', owner),
    };
    for (const send of Object.values(requests)) expect((await send()).statusCode).toBeLessThan(300);

    await proxy.stop();
    for (const [what, send] of Object.entries(requests)) {
      const { res, ms } = await timed(send);
      expectUnavailable(res, ms, what);
      for (const secret of [owner.token, owner.email, TEST_PASSWORD, 'select', 'insert', 'Failed query', 'params']) {
        expect(res.body).not.toContain(secret);
      }
    }
    // Readiness names the database; it answers well within the load balancer's patience.
    const { res: ready, ms: readyMs } = await timed(() => t.get('/readyz'));
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks).toMatchObject({ database: 'failed', storage: 'ok' });
    expect(readyMs).toBeLessThan(3500);

    // Logged at warn, with the driver's code only: never the SQL text or its parameters.
    const lines = captured.lines();
    const faults = lines.filter((l) => l.msg === 'dependency unavailable');
    expect(faults.length).toBeGreaterThanOrEqual(Object.keys(requests).length);
    for (const line of faults) {
      expect(line.level).toBe(40);
      // Refused, or (a pooled connection the proxy cut) terminated: the driver's words only.
      const fault = line.fault as { code?: string; message: string };
      expect(fault.code === 'ECONNREFUSED' || fault.message.startsWith('Connection terminated'), JSON.stringify(fault)).toBe(true);
    }
    const logged = JSON.stringify(lines);
    for (const secret of [owner.token, owner.email, TEST_PASSWORD, 'Failed query', 'params:', 'select "', 'insert into']) {
      expect(logged).not.toContain(secret);
    }
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);

    // Back: the same requests succeed, the pool reconnects by itself.
    await proxy.start();
    for (const [what, send] of Object.entries(requests)) {
      const res = await send();
      expect(res.statusCode, `${what} after recovery: ${res.body}`).toBeLessThan(300);
    }
    expect((await t.get('/readyz')).statusCode).toBe(200);
  });

  it('a stream whose reply cannot be saved ends with the unavailable message, not the model one', async () => {
    const w = await chatWorld(t);
    const url = await listenUrl(t.app);
    const words = Array.from({ length: 8 }, (_, i) => `word${i + 1} `);
    fake.enqueue({ chunks: words, delayMs: 150 });

    const stream = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Slowly please' } });
    expect(stream.status).toBe(200);
    await stream.waitFor((events) => events.some((e) => e.event === 'delta'));
    // PostgreSQL goes away while the model, which is fine, is still streaming.
    await proxy.stop();
    await stream.ended;

    const events = stream.events();
    expect(events.at(-1)).toEqual({ event: 'error', data: { detail: SERVICE_UNAVAILABLE_DETAIL } });
    expect(events.at(-1)!.data.detail).not.toBe(GENERIC_MODEL_FAILURE);
    expect(events.filter((e) => e.event === 'done')).toEqual([]);
    expect(deltaText(events)).toBe(words.join('')); // the model finished
    expect(stream.raw).not.toMatch(/insert|Failed query|params/i);
    expect(fake.requests[0]!.aborted).toBe(false);

    await proxy.start();
    // The question is kept, no reply was saved.
    const rows = await waitUntil(async () => messageRows(t, w.chat.id).catch(() => undefined));
    expect(rows.map((r) => r.role)).toEqual(['user']);
  });

  it('the JSON send answers 503 when the reply cannot be saved, 502 model_failed when the model fails', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ chunks: ['slow ', 'reply ', 'here'], delayMs: 300 });
    const pending = t.post(w.base, { content: 'Not streamed' }, w.alice);
    await fake.waitForRequests(1);
    await proxy.stop();
    const res = await pending;
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json()).toEqual({ detail: SERVICE_UNAVAILABLE_DETAIL, code: 'service_unavailable' });
    expect(res.headers['retry-after']).toBeDefined();

    await proxy.start();
    fake.enqueue({ status: 400, errorMessage: 'model exploded' });
    const failed = await t.post(w.base, { content: 'Model down' }, w.alice);
    expect(failed.statusCode).toBe(502);
    expect(failed.json()).toEqual({ detail: GENERIC_MODEL_FAILURE, code: 'model_failed' });
  });
});

describe.skipIf(!baseUrl)('PostgreSQL unreachable while jobs run', () => {
  let proxy: TcpProxy;
  let site: LocalSite;
  let t: TestApp;

  beforeAll(async () => {
    const server = new URL(baseUrl!);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    site = await startLocalSite();
    for (let i = 0; i < 6; i += 1) {
      site.routes.set(`/page-${i}`, (_req, res) => {
        setTimeout(() => res.writeHead(200, { 'content-type': 'text/html' }).end(`<p>Quay log ${i}: two boats in.</p>`), 400);
      });
    }
    const url = (await workerDatabaseUrlVia('127.0.0.1', proxy.port))!;
    t = await createTestApp({
      ...LIFTED_THROTTLES,
      DATABASE_URL: url,
      URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32',
      JOB_LEASE_SECONDS: '2',
      JOB_RECONCILE_INTERVAL_SECONDS: '0.5',
      JOB_DELIVERY_GRACE_SECONDS: '1',
      INGESTION_RETRY_BACKOFF_MS: '200',
      WORKER_CONCURRENCY: '2',
    });
    await truncateAll(t.database);
  });

  afterAll(async () => {
    await proxy?.start();
    await t?.close();
    await proxy?.close();
    await site?.close();
  });

  it('the worker carries on by itself once the database is back: every import completes', { timeout: 60_000 }, async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const ids: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const res = await t.post(`/api/workspaces/${ws.id}/documents/from-url/`, { url: `${site.url}/page-${i}` }, owner);
      expect(res.statusCode).toBe(202);
      ids.push(res.json().document.id as string);
    }
    await waitUntil(() => site.hits.length > 0, 10_000);
    // The database goes away while the first imports run, for three seconds.
    await proxy.stop();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await proxy.start();
    const started = Date.now();
    for (;;) {
      const tasks = await t.deps.database.db.select().from(ingestionTasks).where(inArray(ingestionTasks.documentId, ids));
      if (tasks.length === ids.length && tasks.every((task) => task.status === 'SUCCESS')) break;
      if (Date.now() - started > 30_000) throw new Error(`imports not complete: ${JSON.stringify(tasks.map((task) => task.status))}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const docs = await t.deps.database.db.select().from(documents).where(inArray(documents.id, ids));
    expect(docs.map((d) => d.processingStatus)).toEqual(ids.map(() => 'ready'));
  });
});
