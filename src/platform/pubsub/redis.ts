import type { Logger } from 'pino';
import { createRedisClient, firstConnection, quitRedis } from '../redis.js';
import { deliver } from './memory.js';
import type { MessageHandler, PubSub } from './port.js';

export interface RedisPubSubOptions {
  url: string;
  /** REDIS_PREFIX: channel `x` is the Redis channel `<prefix>:x`. */
  prefix: string;
  log: Logger;
  /**
   * Longest a publish, retained read or ping may take (REDIS_COMMAND_TIMEOUT_MS, default 1500 ms).
   * The publishing connection has no offline queue: while Redis is unreachable its commands fail
   * at once instead of waiting for a reconnect, and a hung Redis fails them after this long.
   */
  commandTimeoutMs?: number;
}

interface ChannelState {
  handlers: Set<MessageHandler>;
  subscribed: boolean;
}

/**
 * Redis pub/sub: one connection publishes (and keeps retained messages), one subscriber
 * connection carries every channel of this process (ioredis re-subscribes them after a
 * reconnect). Retained messages are plain keys with an expiry, `<prefix>:retained:<channel>:<key>`.
 */
export function createRedisPubSub(options: RedisPubSubOptions): PubSub {
  const { url, prefix, log } = options;
  const commandTimeoutMs = options.commandTimeoutMs ?? 1500;
  // Request paths use this connection (stop requests, stream start): bounded, never queued offline.
  const publisher = createRedisClient(url, log, 'pubsub-publish', { enableOfflineQueue: false, commandTimeout: commandTimeoutMs });
  // Keeps its offline queue: subscriptions made while disconnected apply on reconnect.
  const subscriber = createRedisClient(url, log, 'pubsub-subscribe');
  const channels = new Map<string, ChannelState>();
  let closed = false;
  const fullName = (channel: string) => `${prefix}:${channel}`;
  const retainedName = (channel: string, key: string) => `${prefix}:retained:${channel}:${key}`;

  // Only the first connection is waited for (briefly): without an offline queue a command sent
  // before it would fail although Redis is fine. Later outages fail commands at once.
  const firstConnect = firstConnection(publisher, commandTimeoutMs);
  async function usable() {
    if (closed) throw new Error('The pub/sub is closed');
    await firstConnect();
  }

  subscriber.on('message', (redisChannel: string, message: string) => {
    if (!redisChannel.startsWith(`${prefix}:`)) return;
    const state = channels.get(redisChannel.slice(prefix.length + 1));
    if (!state) return;
    for (const handler of [...state.handlers]) deliver(log, redisChannel, handler, message);
  });

  // Whether the subscribing connection receives: false from a 'close' until the connection is
  // ready again and a PING has answered. ioredis re-sends SUBSCRIBE for every channel before it
  // emits 'ready', and replies come in order, so once the PING answers the channels are back.
  const watchers = new Set<(receiving: boolean) => void>();
  let receiving = true;
  const notify = (value: boolean) => {
    if (receiving === value) return;
    receiving = value;
    for (const watcher of [...watchers]) {
      try {
        watcher(value);
      } catch (error) {
        log.error({ err: error }, 'pub/sub subscription watcher failed');
      }
    }
  };
  subscriber.on('close', () => notify(false));
  subscriber.on('ready', () => {
    if (receiving || closed) return;
    subscriber.ping().then(
      () => {
        if (subscriber.status === 'ready' && !closed) notify(true);
      },
      // Lost again before the answer: the next 'ready' tries again.
      () => undefined,
    );
  });

  // SUBSCRIBE / UNSUBSCRIBE calls run one at a time, in call order, so concurrent subscribe and
  // unsubscribe of one channel always leave Redis matching the handlers that remain.
  let pending: Promise<void> = Promise.resolve();

  // Brings Redis' subscription to `channel` in line with whether anyone listens.
  function sync(channel: string): Promise<void> {
    const next = pending.then(async () => {
      const state = channels.get(channel);
      if (!state) return;
      const wanted = state.handlers.size > 0;
      if (wanted && !state.subscribed) {
        await subscriber.subscribe(fullName(channel));
        state.subscribed = true;
      } else if (!wanted && state.subscribed) {
        await subscriber.unsubscribe(fullName(channel));
        state.subscribed = false;
      }
      if (!wanted && !state.subscribed) channels.delete(channel);
    });
    // Keep the chain alive after a failure; the caller still sees the error.
    pending = next.catch(() => undefined);
    return next;
  }

  return {
    kind: 'redis',

    async publish(channel, message) {
      await usable();
      await publisher.publish(fullName(channel), message);
    },

    async publishRetained(channel, key, message, ttlMs) {
      await usable();
      // MULTI: a subscriber that receives the message can already GET it.
      const results = await publisher
        .multi()
        .set(retainedName(channel, key), message, 'PX', Math.max(1, Math.round(ttlMs)))
        .publish(fullName(channel), message)
        .exec();
      const failed = results?.find(([error]) => error);
      if (!results || failed) throw failed?.[0] ?? new Error('Retained publish was discarded');
    },

    async retained(channel, key) {
      await usable();
      return (await publisher.get(retainedName(channel, key))) ?? undefined;
    },

    async clearRetained(channel, key) {
      await usable();
      await publisher.del(retainedName(channel, key));
    },

    async subscribe(channel, handler) {
      if (closed) throw new Error('The pub/sub is closed');
      let state = channels.get(channel);
      if (!state) channels.set(channel, (state = { handlers: new Set(), subscribed: false }));
      // Wrapped so the same function can be subscribed twice and unsubscribed independently.
      const entry: MessageHandler = (message) => handler(message);
      state.handlers.add(entry);
      const current = state;
      try {
        await sync(channel);
      } catch (error) {
        current.handlers.delete(entry);
        if (!current.handlers.size && !current.subscribed && channels.get(channel) === current) channels.delete(channel);
        throw error;
      }
      return async () => {
        if (!current.handlers.delete(entry) || closed) return;
        await sync(channel);
      };
    },

    watchSubscriptions(listener) {
      watchers.add(listener);
      return () => void watchers.delete(listener);
    },

    async ping() {
      await usable();
      await publisher.ping();
    },

    async close() {
      if (closed) return;
      closed = true;
      channels.clear();
      watchers.clear();
      await Promise.all([quitRedis(subscriber), quitRedis(publisher)]);
    },
  };
}
