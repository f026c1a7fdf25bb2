import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../test/support/app.js';
import { chatWorld, deltaText, injectStream } from '../../test/support/chat.js';
import { waitUntil } from '../../test/support/wait.js';
import { type FakeModelServer, startFakeModelServer } from '../../test/support/fake-model-server.js';
import { hasRedisServer, type RedisServer, startRedisServer } from '../../test/support/redis-server.js';
import { SERVICE_UNAVAILABLE_DETAIL } from './errors.js';
import { createMemoryQueue } from './queue/memory.js';
import type { JobQueue } from './queue/port.js';

/**
 * Redis goes away (Redis profile only): the app talks to a private redis-server that the test
 * stops and starts again; the machine's shared Redis is never touched.
 */
describe.skipIf(!process.env.TEST_REDIS_URL || !hasRedisServer)('Redis unreachable', () => {
  let redis: RedisServer;
  let fake: FakeModelServer;
  let t: TestApp;
  let queue: JobQueue;

  beforeAll(async () => {
    redis = await startRedisServer();
    fake = await startFakeModelServer();
    // The job queue stays in-process here: its behaviour across a Redis outage belongs to the
    // queue's own tests (a BullMQ worker closed right after Redis restarted can hang its close).
    queue = createMemoryQueue({ concurrency: 1, log: pino({ level: 'silent' }) });
    t = await createTestApp({ ...fake.env, REDIS_URL: redis.url, THROTTLE_CHAT_MESSAGES: '10000/minute' }, { queue });
  });

  afterAll(async () => {
    redis?.resume();
    await redis?.start();
    await t?.close();
    await queue?.close();
    await redis?.close();
    await fake?.close();
  });

  beforeEach(() => {
    fake.reset();
  });

  async function timed<T>(send: () => Promise<T>): Promise<{ res: T; ms: number }> {
    const started = Date.now();
    const res = await send();
    return { res, ms: Date.now() - started };
  }

  it('stop/ answers within 2 s while Redis is down, /readyz names it, and both recover without a restart', async () => {
    const w = await chatWorld(t);
    const stopUrl = `${w.base}stream/stop/`;
    expect((await t.post(stopUrl, { stream_id: 'before' }, w.alice)).statusCode).toBe(202);

    await redis.stop();
    for (const streamId of ['down-1', 'down-2', 'down-3']) {
      const { res, ms } = await timed(() => t.post(stopUrl, { stream_id: streamId }, w.alice));
      expect(ms, `stop took ${ms} ms`).toBeLessThan(2000);
      expect([202, 503], res.body).toContain(res.statusCode);
      if (res.statusCode === 503) {
        expect(res.json()).toEqual({ detail: SERVICE_UNAVAILABLE_DETAIL, code: 'service_unavailable' });
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
    }
    const { res: ready, ms: readyMs } = await timed(() => t.get('/readyz'));
    expect(readyMs, `readyz took ${readyMs} ms`).toBeLessThan(3500);
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks).toMatchObject({ redis: 'failed', database: 'ok' });

    // A reply still streams (the throttle counts locally, the retained-stop check gives up).
    fake.enqueue({ text: 'Still here' });
    const { res: streamed, ms: streamMs } = await timed(() => injectStream(t, `${w.base}stream/`, { content: 'Q' }, w.alice));
    expect(streamMs).toBeLessThan(5000);
    expect(deltaText(streamed.events)).toBe('Still here');
    expect(streamed.done).toMatchObject({ stopped: false });

    await redis.start();
    // ioredis reconnects by itself (its retry delay grows to 2 s): stops are recorded again.
    await waitUntil(async () => (await t.post(stopUrl, { stream_id: 'probe' }, w.alice)).statusCode === 202, 15_000);
    await waitUntil(async () => (await t.get('/readyz')).statusCode === 200, 15_000);
    // And a stop recorded in Redis is honoured by the stream that starts after it.
    expect((await t.post(stopUrl, { stream_id: 'after' }, w.alice)).statusCode).toBe(202);
    fake.enqueue({ chunks: ['never ', 'sent'], delayMs: 200 });
    const stopped = await injectStream(t, `${w.base}stream/`, { content: 'Stop me', stream_id: 'after' }, w.alice);
    expect(stopped.done).toMatchObject({ stopped: true });
  });

  it('stop/ answers within 2 s while Redis hangs (accepts, never answers), and /readyz within 3.5 s', async () => {
    const w = await chatWorld(t);
    const stopUrl = `${w.base}stream/stop/`;
    await waitUntil(async () => (await t.post(stopUrl, { stream_id: 'ready' }, w.alice)).statusCode === 202, 15_000);
    redis.pause();
    try {
      const { res, ms } = await timed(() => t.post(stopUrl, { stream_id: 'hung' }, w.alice));
      expect(ms, `stop took ${ms} ms`).toBeLessThan(2000);
      expect(res.statusCode, res.body).toBe(503);
      expect(res.headers['retry-after']).toBeDefined();
      const { res: ready, ms: readyMs } = await timed(() => t.get('/readyz'));
      expect(readyMs, `readyz took ${readyMs} ms`).toBeLessThan(3500);
      expect(ready.json().checks).toMatchObject({ redis: 'failed', database: 'ok' });
    } finally {
      redis.resume();
    }
    await waitUntil(async () => (await t.post(stopUrl, { stream_id: 'resumed' }, w.alice)).statusCode === 202, 15_000);
  });
});
