import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { createRedisClient, firstConnection, quitRedis } from '../redis.js';
import type { RateDecision, RateLimiter } from './port.js';
import { type ParsedRate, parseRate } from './rates.js';

/**
 * Both adapters wrap rate-limiter-flexible, whose limiters count in fixed windows: the first
 * call on a key starts a window of the rate's duration. One limiter object exists per distinct
 * rate, created on first use; its key prefix names the rate, so `5/minute` and `5/hour` on the
 * same key never share a counter.
 */
function createLimiter(
  kind: RateLimiter['kind'],
  make: (rate: ParsedRate) => RateLimiterAbstract,
  hooks: { beforeConsume?: () => Promise<void>; close: () => Promise<void> },
): RateLimiter {
  const limiters = new Map<string, RateLimiterAbstract>();

  return {
    kind,
    async consume(key, rate) {
      const parsed = parseRate(rate);
      // `20/min` and `20/minute` are one rate, so one limiter and one counter.
      const id = rateId(parsed);
      let limiter = limiters.get(id);
      if (!limiter) limiters.set(id, (limiter = make(parsed)));
      await hooks.beforeConsume?.();
      try {
        const result = await limiter.consume(key, 1);
        return {
          allowed: true,
          limit: parsed.points,
          remaining: result.remainingPoints,
          retryAfterSeconds: 0,
          resetSeconds: secondsUntil(result.msBeforeNext),
        } satisfies RateDecision;
      } catch (rejection) {
        // rate-limiter-flexible rejects with a RateLimiterRes when over the limit, an Error otherwise.
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const wait = secondsUntil(rejection.msBeforeNext);
        return { allowed: false, limit: parsed.points, remaining: 0, retryAfterSeconds: wait, resetSeconds: wait };
      }
    },
    close: hooks.close,
  };
}

/** Whole seconds, rounded up, at least 1: a window that ends in 200 ms is not over yet. */
const secondsUntil = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

const rateId = (rate: ParsedRate) => `${rate.points}-${rate.durationSeconds}`;
const keyPrefix = (prefix: string, rate: ParsedRate) => `${prefix}:rl:${rateId(rate)}`;

/** The embedded profile: counters in this process. */
export function createMemoryRateLimiter(options: { prefix?: string } = {}): RateLimiter {
  const prefix = options.prefix ?? 'rl';
  return createLimiter(
    'memory',
    (rate) => new RateLimiterMemory({ points: rate.points, duration: rate.durationSeconds, keyPrefix: keyPrefix(prefix, rate) }),
    { close: async () => {} },
  );
}

export interface RedisRateLimiterOptions {
  url: string;
  /** REDIS_PREFIX: counters live at `<prefix>:rl:<points>-<seconds>:<key>`. */
  prefix: string;
  log: Logger;
  /** How long the first call waits for the initial connection before counting locally (default 2000 ms). */
  connectTimeoutMs?: number;
  /** Longest a counter update may take before the insurance limiter answers instead (default 1500 ms). */
  commandTimeoutMs?: number;
}

/**
 * Counters in Redis, shared by every API process. While Redis is unreachable the limiter
 * counts in this process instead (rate-limiter-flexible's insurance limiter): throttles stay
 * approximately in force and requests are neither refused nor left hanging.
 */
export function createRedisRateLimiter(options: RedisRateLimiterOptions): RateLimiter {
  const { url, prefix, log } = options;
  // No offline queue: a call while disconnected fails at once and the insurance limiter answers;
  // the command timeout does the same when Redis hangs without closing the connection.
  const client: Redis = createRedisClient(url, log, 'ratelimit', {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: options.commandTimeoutMs ?? 1500,
  });
  const firstConnect = firstConnection(client, options.connectTimeoutMs ?? 2000);
  return createLimiter(
    'redis',
    (rate) => {
      const base = { points: rate.points, duration: rate.durationSeconds, keyPrefix: keyPrefix(prefix, rate) };
      return new RateLimiterRedis({
        ...base,
        storeClient: client,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory(base),
      });
    },
    {
      // Only the first connection is awaited (briefly), so that a freshly started process
      // counts in Redis from its first call; later outages go straight to the insurance limiter.
      beforeConsume: firstConnect,
      close: () => quitRedis(client),
    },
  );
}
