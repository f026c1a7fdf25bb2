import { type Command, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { startClientSpan } from './tracing.js';

/**
 * One ioredis connection with its errors logged (an `error` event without a listener is
 * printed to stderr by ioredis). Each adapter owns its connections and quits them on close.
 * Key prefixes are applied by the adapters (BullMQ refuses ioredis' own `keyPrefix`).
 */
export function createRedisClient(url: string, log: Logger, role: string, options: RedisOptions = {}): Redis {
  const client = new Redis(url, { connectionName: role, ...options });
  traceCommands(client, role);
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
 * One CLIENT span per command (its name only, never keys or values) while tracing is on: every
 * command of ioredis, BullMQ's included, goes through `sendCommand`. Off, one test per command.
 */
function traceCommands(client: Redis, role: string): void {
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command: Command, ...rest: unknown[]) => {
    const end = startClientSpan(`redis ${command.name}`, {
      'db.system.name': 'redis',
      'db.operation.name': command.name.toUpperCase(),
      'redis.connection': role,
    });
    const result = (send as (command: Command, ...rest: unknown[]) => unknown)(command, ...rest);
    if (end) command.promise.then(() => end(), (error: unknown) => end(error ?? 'failed'));
    return result;
  };
}

/**
 * For connections without an offline queue, whose commands fail at once while not connected:
 * returns a function that waits (at most `ms`, shared by all callers) for the client's FIRST
 * connection, so a fresh process does not fail its very first commands; once the client has been
 * ready it resolves at once, and later outages fail commands immediately. Never rejects.
 */
export function firstConnection(client: Redis, ms: number): () => Promise<void> {
  let connectedOnce = client.status === 'ready';
  client.once('ready', () => (connectedOnce = true));
  let waiting: Promise<void> | undefined;
  return () => {
    if (connectedOnce || client.status === 'ready') return Promise.resolve();
    waiting ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        client.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      client.once('ready', done);
    });
    return waiting;
  };
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
