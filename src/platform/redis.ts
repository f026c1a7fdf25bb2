import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';

/**
 * One ioredis connection with its errors logged (an `error` event without a listener is
 * printed to stderr by ioredis). Each adapter owns its connections and quits them on close.
 * Key prefixes are applied by the adapters (BullMQ refuses ioredis' own `keyPrefix`).
 */
export function createRedisClient(url: string, log: Logger, role: string, options: RedisOptions = {}): Redis {
  const client = new Redis(url, { connectionName: role, ...options });
  let lastLogged = 0;
  client.on('error', (error: Error) => {
    // ioredis retries every second or so while Redis is down: log at most every 10 s.
    const now = Date.now();
    if (now - lastLogged < 10_000) return;
    lastLogged = now;
    log.warn({ err: error, redis: role }, 'redis connection error');
  });
  return client;
}

/**
 * Resolves true once the client is ready, or false after `ms` (never rejects). For connections
 * without an offline queue, whose commands fail at once while not connected: a fresh process
 * waits this long for its first connection instead of failing its very first commands.
 */
export function whenReady(client: Redis, ms: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ready: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ready);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    client.once('ready', onReady);
  });
}

/** Closes a connection politely, or drops it when Redis cannot be reached. */
export async function quitRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  try {
    await Promise.race([client.quit(), new Promise((_, reject) => setTimeout(() => reject(new Error('quit timed out')), 2000).unref())]);
  } catch {
    client.disconnect();
  }
}

/** Resolves when the client is ready or after `ms`, whichever comes first; never rejects. */
export function waitForReady(client: Redis, ms: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    client.once('ready', done);
  });
}
