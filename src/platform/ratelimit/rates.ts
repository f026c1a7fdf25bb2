import { ThrottledError } from '../errors.js';
import { recordThrottle } from '../request-context.js';
import type { RateDecision, RateLimiter, RateString } from './port.js';

export interface ParsedRate {
  points: number;
  durationSeconds: number;
}

const UNITS: Record<string, number> = {
  s: 1,
  sec: 1,
  second: 1,
  m: 60,
  min: 60,
  minute: 60,
  h: 3600,
  hour: 3600,
  d: 86400,
  day: 86400,
};

/** Parses DRF's rate syntax (`20/minute`, `5/s`, `100/day`); throws a clear error otherwise. */
export function parseRate(rate: RateString): ParsedRate {
  const match = /^\s*(\d+)\s*\/\s*([a-z]+)\s*$/i.exec(rate);
  if (!match) throw new Error(`Invalid rate "${rate}": expected <count>/<period>, such as 20/minute`);
  const points = Number(match[1]);
  const unit = match[2]!.toLowerCase();
  const durationSeconds = UNITS[unit];
  if (durationSeconds === undefined) {
    throw new Error(`Invalid rate "${rate}": the period must be one of s, sec, second, m, min, minute, h, hour, d, day`);
  }
  if (!Number.isSafeInteger(points) || points < 1) {
    throw new Error(`Invalid rate "${rate}": the count must be a whole number of at least 1`);
  }
  return { points, durationSeconds };
}

/**
 * Counts one call of `userId` against a throttle scope (such as `chat_messages`) and throws
 * ThrottledError (429 with Retry-After) when it is over `rate`. The decision is recorded in the
 * request context, so that the response carries the RateLimit-* headers.
 */
export async function throttle(
  limiter: RateLimiter,
  scope: string,
  userId: number | string,
  rate: RateString,
): Promise<RateDecision> {
  const decision = await limiter.consume(`${scope}:${userId}`, rate, scope);
  // The response reports it (RateLimit-* headers, platform/ratelimit/headers.ts); the caller never sees HTTP.
  recordThrottle(decision);
  if (!decision.allowed) throw new ThrottledError(decision.retryAfterSeconds);
  return decision;
}

/** `limiter`, reporting every refused call with its throttle's scope (metrics); closing stays with the owner. */
export function reportingRefusals(limiter: RateLimiter, onRefused: (scope: string) => void): RateLimiter {
  return {
    kind: limiter.kind,
    async consume(key, rate, scope) {
      const decision = await limiter.consume(key, rate, scope);
      if (!decision.allowed) onRefused(scope ?? 'other');
      return decision;
    },
    close: () => limiter.close(),
  };
}
