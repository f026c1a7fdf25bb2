import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import { createRedisClient, firstConnection, quitRedis } from '../redis.js';
import type { RateLimiter } from './port.js';
import { createLimiter, keyPrefix } from './memory.js';

/** Both adapters: the in-process one (memory.ts) and the Redis one, defined here. */
export { createMemoryRateLimiter } from './memory.js';

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
