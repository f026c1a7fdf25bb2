import Fastify from 'fastify';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { deleteKeys, testRedisUrl, uniquePrefix } from '../../../test/support/redis.js';
import { registerErrorHandler } from '../error-handler.js';
import { ThrottledError } from '../errors.js';
import { createMemoryRateLimiter, createRedisRateLimiter } from './limiter.js';
import type { RateLimiter } from './port.js';
import { parseRate, throttle } from './rates.js';
import { Redis } from 'ioredis';

const log = pino({ level: 'silent' });
const prefixes: string[] = [];

/** "sharing" gives two API processes' limiters; the in-process adapter has one per process. */
const adapters = [
  {
    kind: 'memory',
    skip: false,
    sharing: (): [RateLimiter, RateLimiter] => {
      const limiter = createMemoryRateLimiter();
      return [limiter, limiter];
    },
  },
  {
    kind: 'redis',
    skip: !testRedisUrl,
    sharing: (): [RateLimiter, RateLimiter] => {
      const prefix = uniquePrefix('rl');
      prefixes.push(prefix);
      return [
        createRedisRateLimiter({ url: testRedisUrl!, prefix, log }),
        createRedisRateLimiter({ url: testRedisUrl!, prefix, log }),
      ];
    },
  },
] as const;

afterAll(async () => {
  const url = testRedisUrl;
  if (url) await Promise.all(prefixes.map((prefix) => deleteKeys(url, prefix)));
});

describe('parseRate', () => {
  it.each([
    ['20/minute', 20, 60],
    ['20/min', 20, 60],
    ['5/m', 5, 60],
    ['1/s', 1, 1],
    ['10/sec', 10, 1],
    ['3/second', 3, 1],
    ['30/hour', 30, 3600],
    ['30/h', 30, 3600],
    ['100/day', 100, 86400],
    ['7/d', 7, 86400],
    [' 4 / Minute ', 4, 60],
  ])('parses %s', (rate, points, durationSeconds) => {
    expect(parseRate(rate)).toEqual({ points, durationSeconds });
  });

  it.each([
    ['20', /expected <count>\/<period>/],
    ['minute/20', /expected <count>\/<period>/],
    ['-1/minute', /expected <count>\/<period>/],
    ['1.5/minute', /expected <count>\/<period>/],
    ['20/fortnight', /period must be one of/],
    ['20/minutes', /period must be one of/],
    ['0/minute', /at least 1/],
  ])('refuses %s with a clear error', (rate, message) => {
    expect(() => parseRate(rate)).toThrow(message);
  });
});

describe.each(adapters)('rate limiter contract: $kind', ({ kind, skip, sharing }) => {
  let opened: RateLimiter[] = [];
  const open = () => {
    const pair = sharing();
    opened.push(...pair);
    return pair;
  };
  afterEach(async () => {
    await Promise.all([...new Set(opened)].map((l) => l.close()));
    opened = [];
  });

  describe.skipIf(skip)(kind, () => {
    it('allows `points` calls per window, then refuses with the time left in the window', async () => {
      const [limiter] = open();
      expect(limiter.kind).toBe(kind);
      const decisions = [];
      for (let i = 0; i < 4; i += 1) decisions.push(await limiter.consume('user:1', '3/minute'));
      expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      expect(decisions.slice(0, 3).every((d) => d.retryAfterSeconds === 0)).toBe(true);
      // The limit and the time left in the window, on every decision.
      expect(decisions.every((d) => d.limit === 3 && d.resetSeconds >= 50 && d.resetSeconds <= 60)).toBe(true);
      expect(decisions[3]!.retryAfterSeconds).toBeGreaterThanOrEqual(50);
      expect(decisions[3]!.retryAfterSeconds).toBeLessThanOrEqual(60);
    });

    it('counts every process against the same window', async () => {
      const [a, b] = open();
      expect((await a.consume('shared', '2/hour')).allowed).toBe(true);
      expect((await b.consume('shared', '2/hour')).allowed).toBe(true);
      const third = await a.consume('shared', '2/hour');
      expect(third.allowed).toBe(false);
      expect(third.retryAfterSeconds).toBeGreaterThan(3500);
      expect((await b.consume('shared', '2/hour')).allowed).toBe(false);
    });

    it('keeps keys and rates apart, but treats spellings of one rate as one', async () => {
      const [limiter] = open();
      expect((await limiter.consume('k1', '1/minute')).allowed).toBe(true);
      expect((await limiter.consume('k1', '1/minute')).allowed).toBe(false);
      expect((await limiter.consume('k1', '1/min')).allowed).toBe(false);
      expect((await limiter.consume('k2', '1/minute')).allowed).toBe(true);
      expect((await limiter.consume('k1', '1/hour')).allowed).toBe(true);
    });

    it('starts a fresh window once the old one ends', async () => {
      const [limiter] = open();
      expect((await limiter.consume('burst', '2/second')).allowed).toBe(true);
      expect((await limiter.consume('burst', '2/second')).allowed).toBe(true);
      const refused = await limiter.consume('burst', '2/second');
      expect(refused).toEqual({ allowed: false, limit: 2, remaining: 0, retryAfterSeconds: 1, resetSeconds: 1 });
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expect(await limiter.consume('burst', '2/second')).toEqual({ allowed: true, limit: 2, remaining: 1, retryAfterSeconds: 0, resetSeconds: 1 });
    });

    it('throttle() passes within the rate and throws ThrottledError (429, Retry-After) beyond it', async () => {
      const [limiter] = open();
      const app = Fastify();
      registerErrorHandler(app);
      app.post('/chat', async () => {
        await throttle(limiter, 'chat_messages', 7, '2/minute');
        return { ok: true };
      });
      const statuses = [];
      for (let i = 0; i < 3; i += 1) statuses.push(await app.inject({ method: 'POST', url: '/chat' }));
      expect(statuses.map((r) => r.statusCode)).toEqual([200, 200, 429]);
      const refused = statuses[2]!;
      expect(refused.json()).toEqual({ detail: expect.stringMatching(/throttled/), code: 'throttled' });
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(50);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Scopes and users are counted separately.
      await expect(throttle(limiter, 'chat_messages', 8, '2/minute')).resolves.toMatchObject({ allowed: true });
      await expect(throttle(limiter, 'translations', 7, '2/minute')).resolves.toMatchObject({ allowed: true });
      await expect(throttle(limiter, 'chat_messages', 7, '2/minute')).rejects.toBeInstanceOf(ThrottledError);
      await app.close();
    });
  });
});

describe.skipIf(!testRedisUrl)('Redis rate limiter specifics', () => {
  it('stores its counters under REDIS_PREFIX', async () => {
    const prefix = uniquePrefix('rl');
    prefixes.push(prefix);
    const limiter = createRedisRateLimiter({ url: testRedisUrl!, prefix, log });
    await limiter.consume('uploads:1', '30/hour');
    await limiter.close();
    const redis = new Redis(testRedisUrl!);
    const keys = await redis.keys(`${prefix}*`);
    await redis.quit();
    expect(keys).toEqual([`${prefix}:rl:30-3600:uploads:1`]);
  });
});

describe('Redis rate limiter without Redis', () => {
  it('keeps counting in the process instead of failing or hanging', async () => {
    // Port 1 refuses connections at once.
    const limiter = createRedisRateLimiter({ url: 'redis://127.0.0.1:1', prefix: 'nowhere', log, connectTimeoutMs: 100 });
    try {
      const decisions = [];
      for (let i = 0; i < 3; i += 1) decisions.push(await limiter.consume('u', '2/minute'));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    } finally {
      await limiter.close();
    }
  });
});
