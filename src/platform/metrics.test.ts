import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestApp, TEST_SECRET_KEY, type TestApp } from '../../test/support/app.js';
import { recordUsage } from '../../test/support/billing.js';
import { chatWorld, listenUrl, openHttpStream, useChatTestApp } from '../../test/support/chat.js';
import { docsBase, LIFTED_THROTTLES, readyTextDocument } from '../../test/support/documents.js';
import { spawnService } from '../../test/support/processes.js';
import { freePort } from '../../test/support/redis-server.js';
import { startFakeModelServer } from '../../test/support/fake-model-server.js';
import { captureLog } from '../../test/support/log.js';
import { waitUntil } from '../../test/support/wait.js';
import { deliver, productObject, providerEvent, TEST_WEBHOOK_SECRET } from '../../test/support/webhook.js';

const TOKEN = 'metrics-token-0123456789abcdef';

/**
 * The value of one series in a Prometheus text exposition (0 when absent, as Prometheus reads a
 * counter that has not been created yet). `labels` must match exactly, in any order.
 */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    const wanted = Object.entries(labels);
    if (wanted.length === Object.keys(found).length && wanted.every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return 0;
}

async function scrape(baseUrl: string, token = TOKEN): Promise<string> {
  const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

describe('metric families move after the action that should move them', () => {
  const { t, fake } = useChatTestApp({
    METRICS_TOKEN: TOKEN,
    PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    THROTTLE_CHAT_MESSAGES: '3/minute',
    ...LIFTED_THROTTLES,
  });

  it('model calls, tokens, cost, streams, stops, disconnects, 402, 429, webhooks, ingestion, URL refusals, documents, pool', { timeout: 60_000 }, async () => {
    const url = await listenUrl(t.app);
    const w = await chatWorld(t);
    const model = w.chat.ai_model;
    const provider = t.deps.catalog.chatModel(model)!.provider;
    const chat = { kind: 'chat', provider, model };
    const before = await scrape(url);

    // A streamed send: one ok call, its tokens and cost, time to first token, a stream opened and closed.
    fake.enqueue({ text: 'Hello there friend', usage: { inputTokens: 11, outputTokens: 7 } });
    const sent = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Hi' } });
    await sent.ended;
    expect(sent.events().at(-1)!.event).toBe('done');
    let now = await scrape(url);
    expect(sample(now, 'model_calls_total', { ...chat, outcome: 'ok' })).toBe(sample(before, 'model_calls_total', { ...chat, outcome: 'ok' }) + 1);
    expect(sample(now, 'model_input_tokens_total', chat) - sample(before, 'model_input_tokens_total', chat)).toBe(11);
    expect(sample(now, 'model_output_tokens_total', chat) - sample(before, 'model_output_tokens_total', chat)).toBe(7);
    expect(sample(now, 'model_cost_usd_total', chat)).toBeGreaterThan(sample(before, 'model_cost_usd_total', chat));
    expect(sample(now, 'model_time_to_first_token_seconds_count', { provider, model })).toBe(1);
    expect(sample(now, 'model_call_duration_seconds_count', { ...chat, outcome: 'ok' })).toBe(1);
    expect(sample(now, 'chat_streams_open')).toBe(0);

    // A stream stopped by its user: outcome stopped and a stop; while it runs, one open stream.
    const words = Array.from({ length: 20 }, (_, i) => `word${i} `);
    fake.enqueue({ chunks: words, delayMs: 200 });
    const stopped = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Slowly', stream_id: 'metrics-stop' } });
    await stopped.waitFor((events) => events.some((e) => e.event === 'delta'));
    expect(sample(await scrape(url), 'chat_streams_open')).toBe(1);
    expect((await t.post(`${w.base}stream/stop/`, { stream_id: 'metrics-stop' }, w.alice)).statusCode).toBe(202);
    await stopped.ended;
    now = await scrape(url);
    expect(sample(now, 'chat_stream_stops_total')).toBe(sample(before, 'chat_stream_stops_total') + 1);
    expect(sample(now, 'model_calls_total', { ...chat, outcome: 'stopped' })).toBe(1);
    expect(sample(now, 'chat_streams_open')).toBe(0);

    // A client that goes away: the reply is still generated, and the disconnect counted.
    fake.enqueue({ chunks: ['one ', 'two ', 'three ', 'four '], delayMs: 150 });
    const left = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Then leave' } });
    await left.waitFor((events) => events.some((e) => e.event === 'delta'));
    left.destroy();
    await waitUntil(async () => sample(await scrape(url), 'chat_stream_client_disconnects_total') === 1);
    expect(sample(await scrape(url), 'chat_streams_open')).toBe(0);

    // The fourth message within the minute: 429 from the chat_messages limiter.
    const throttled = await t.post(w.base, { content: 'Once more' }, w.alice);
    expect(throttled.statusCode).toBe(429);
    now = await scrape(url);
    expect(sample(now, 'throttled_requests_total', { scope: 'chat_messages' })).toBe(1);

    // A signed webhook event, applied; one with a bad signature, rejected.
    expect((await deliver(t, providerEvent('product.created', productObject()))).statusCode).toBe(200);
    expect((await deliver(t, providerEvent('product.created', productObject()), { header: 't=1,v1=00' })).statusCode).toBe(400);
    now = await scrape(url);
    expect(sample(now, 'webhook_events_total', { type: 'product.created', outcome: 'applied' })).toBe(1);
    expect(sample(now, 'webhook_events_total', { type: 'unknown', outcome: 'rejected' })).toBe(1);

    // A document ingested: its page and chunks, and the documents gauge read from the database.
    await readyTextDocument(t, w.ws.id, w.wsOwner, 'Metrics are numbers operators alert on. '.repeat(20));
    now = await scrape(url);
    expect(sample(now, 'ingestion_pages_total')).toBe(sample(before, 'ingestion_pages_total') + 1);
    expect(sample(now, 'ingestion_chunks_total')).toBeGreaterThan(sample(before, 'ingestion_chunks_total'));
    expect(sample(now, 'documents', { status: 'ready' })).toBe(1);
    expect(sample(now, 'documents', { status: 'failed' })).toBe(0);

    // A URL to a private address, refused by the fetch guard.
    const blocked = await t.post(`${docsBase(w.ws.id)}from-url/`, { url: 'http://127.0.0.2/' }, w.wsOwner);
    expect(blocked.statusCode).toBe(400);
    expect(sample(await scrape(url), 'url_fetch_refusals_total', { reason: 'address' })).toBe(1);

    // The credit used up: 402, counted as a credit refusal.
    await recordUsage(t, w.ws.id, 1_000);
    const refused = await t.post(w.base, { content: 'No credit' }, w.bob);
    expect(refused.statusCode).toBe(402);
    expect(sample(await scrape(url), 'credit_refusals_total')).toBe(sample(before, 'credit_refusals_total') + 1);

    // The database pool, and the queue families in the same registry.
    now = await scrape(url);
    expect(sample(now, 'db_pool_connections', { state: 'max' })).toBeGreaterThan(0);
    expect(now).toMatch(/^db_pool_connections\{state="in_use"\} \d+$/m);
    expect(now).toMatch(/^db_pool_waiting \d+$/m);
    expect(sample(now, 'queue_jobs_completed_total', { queue: 'documents.ingest' })).toBeGreaterThanOrEqual(1);
    // Bounded labels: no chat, workspace or user id reaches a series.
    for (const id of [w.ws.id, w.chat.id]) expect(now).not.toContain(id);
  });
});

describe('/metrics protection', () => {
  async function withApp(env: Record<string, string>, run: (app: TestApp, url: string) => Promise<void>) {
    const app = await createTestApp(env);
    try {
      await run(app, await listenUrl(app.app));
    } finally {
      await app.close();
    }
  }

  it('METRICS_TOKEN: the API port serves /metrics only with the bearer token; 401 {detail, code} otherwise', async () => {
    await withApp({ METRICS_TOKEN: TOKEN }, async (_app, url) => {
      const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: TOKEN }, { authorization: `Bearer ${TOKEN}x` }];
      for (const headers of attempts) {
        const res = await fetch(`${url}/metrics`, { headers });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        const body = await res.json();
        expect(body).toEqual({ detail: expect.any(String), code: 'not_authenticated' });
        expect(JSON.stringify(body)).not.toContain('http_requests_total');
      }
      const ok = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('# TYPE model_calls_total counter');
    });
  });

  it('neither METRICS_TOKEN nor METRICS_PORT: the API port answers 404 for /metrics', async () => {
    await withApp({}, async (_app, url) => {
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'not_found' });
    });
  });

  it('METRICS_PORT: a separate listener on METRICS_HOST serves /metrics; the API port does not (real server process)', { timeout: 90_000 }, async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const server = spawnService('server', {
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: String(metricsPort),
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'wsai-metrics-')),
      SECRET_KEY: TEST_SECRET_KEY,
    });
    try {
      await server.ready;
      expect(server.lines().find((line) => line.msg === 'service started')).toMatchObject({ metrics: `127.0.0.1:${metricsPort}`, tracing: 'off' });
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      // The API's request counter saw the /healthz above, and the services' families are there.
      expect(sample(text, 'http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(1);
      expect(text).toContain('# TYPE chat_streams_open gauge');
    } finally {
      await server.stop();
    }
  });
});

describe('the worker process', () => {
  it('serves the same families on WORKER_METRICS_PORT, behind METRICS_TOKEN when it is set', { timeout: 90_000 }, async () => {
    const metricsPort = await freePort();
    const worker = spawnService('worker', {
      WORKER_METRICS_PORT: String(metricsPort),
      HOST: '127.0.0.1',
      METRICS_TOKEN: TOKEN,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'wsai-metrics-worker-')),
      SECRET_KEY: TEST_SECRET_KEY,
    });
    try {
      await worker.ready;
      const base = `http://127.0.0.1:${metricsPort}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const refused = await fetch(`${base}/metrics`);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ code: 'not_authenticated' });
      const text = await scrape(base);
      for (const family of [
        'model_calls_total',
        'model_call_duration_seconds',
        'model_time_to_first_token_seconds',
        'model_input_tokens_total',
        'model_cost_usd_total',
        'ingestion_chunks_total',
        'url_fetch_refusals_total',
        'documents',
        'db_pool_connections',
        'queue_jobs',
        'queue_workers_live',
      ]) {
        expect(text, family).toMatch(new RegExp(`^# TYPE ${family} `, 'm'));
      }
      expect(sample(text, 'queue_workers_live')).toBe(1);
    } finally {
      await worker.stop();
    }
  });
});

describe('the reply log line', () => {
  it('a streamed reply logs one line at its end: user, workspace, chat, model, provider, tokens, cost, timings, outcome; never the text', async () => {
    const fake = await startFakeModelServer();
    const captured = captureLog('info');
    const app = await createTestApp({ ...fake.env, THROTTLE_CHAT_MESSAGES: '10000/minute' }, {}, { log: captured.log });
    try {
      const w = await chatWorld(app);
      fake.enqueue({ text: 'A secret answer', usage: { inputTokens: 21, outputTokens: 4 } });
      const res = await app.request('POST', `${w.base}stream/`, { as: w.alice, body: { content: 'A private question' } });
      expect(res.statusCode).toBe(200);
      const lines = captured.lines().filter((line) => line.msg === 'reply finished');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        userId: expect.any(Number),
        workspaceId: w.ws.id,
        chatId: w.chat.id,
        model: w.chat.ai_model,
        provider: app.deps.catalog.chatModel(w.chat.ai_model)!.provider,
        inputTokens: 21,
        outputTokens: 4,
        costUsd: expect.any(Number),
        durationMs: expect.any(Number),
        timeToFirstTokenMs: expect.any(Number),
        outcome: 'ok',
      });
      expect(lines[0]!.costUsd).toBeGreaterThan(0);
      const all = JSON.stringify(captured.lines());
      expect(all).not.toContain('A secret answer');
      expect(all).not.toContain('A private question');
    } finally {
      await app.close();
      await fake.close();
    }
  });
});
