import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateDecision, RateLimiter } from './port.js';
import { type ParsedRate, parseRate } from './rates.js';

/**
 * The embedded profile's limiter, and the wrapper both adapters share (the Redis one is in
 * limiter.ts, loaded only on the distributed profile so this one never loads ioredis).
 *
 * Both adapters wrap rate-limiter-flexible, whose limiters count in fixed windows: the first
 * call on a key starts a window of the rate's duration. One limiter object exists per distinct
 * rate, created on first use; its key prefix names the rate, so `5/minute` and `5/hour` on the
 * same key never share a counter.
 */
export function createLimiter(
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
export const keyPrefix = (prefix: string, rate: ParsedRate) => `${prefix}:rl:${rateId(rate)}`;

/** The embedded profile: counters in this process. */
export function createMemoryRateLimiter(options: { prefix?: string } = {}): RateLimiter {
  const prefix = options.prefix ?? 'rl';
  return createLimiter(
    'memory',
    (rate) => new RateLimiterMemory({ points: rate.points, duration: rate.durationSeconds, keyPrefix: keyPrefix(prefix, rate) }),
    { close: async () => {} },
  );
}

