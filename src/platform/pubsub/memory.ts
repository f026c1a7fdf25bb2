import type { Logger } from 'pino';
import type { MessageHandler, PubSub } from './port.js';

/** Retained messages kept at most (the oldest go first); Redis' own memory bounds the other adapter. */
const MAX_RETAINED = 10_000;

/**
 * The embedded profile's pub/sub: one process, so a map of handlers. Delivery is asynchronous
 * (never inside `publish`) and a throwing handler is logged, exactly as on the Redis adapter.
 * Retained messages live in a map with their expiry.
 */
export function createMemoryPubSub(options: { log: Logger }): PubSub {
  const { log } = options;
  const channels = new Map<string, Set<MessageHandler>>();
  const retained = new Map<string, { message: string; expiresAt: number }>();
  let closed = false;
  // JSON keeps every (channel, key) pair distinct whatever characters they contain.
  const retainedKey = (channel: string, key: string) => JSON.stringify([channel, key]);

  function publish(channel: string, message: string) {
    if (closed) throw new Error('The pub/sub is closed');
    const handlers = channels.get(channel);
    if (!handlers?.size) return;
    // Snapshot now: like Redis, a message reaches the subscribers active when it was published.
    const targets = [...handlers];
    setImmediate(() => {
      for (const handler of targets) deliver(log, channel, handler, message);
    });
  }

  function retain(id: string, message: string, ttlMs: number) {
    const now = Date.now();
    retained.delete(id); // re-inserted last: the map stays in age order
    if (retained.size >= MAX_RETAINED) {
      for (const [stale, entry] of retained) if (entry.expiresAt <= now) retained.delete(stale);
      while (retained.size >= MAX_RETAINED) retained.delete(retained.keys().next().value!);
    }
    retained.set(id, { message, expiresAt: now + ttlMs });
  }

  return {
    kind: 'memory',

    async publish(channel, message) {
      publish(channel, message);
    },

    async publishRetained(channel, key, message, ttlMs) {
      if (closed) throw new Error('The pub/sub is closed');
      retain(retainedKey(channel, key), message, ttlMs);
      publish(channel, message);
    },

    async retained(channel, key) {
      if (closed) throw new Error('The pub/sub is closed');
      const id = retainedKey(channel, key);
      const entry = retained.get(id);
      if (!entry) return undefined;
      if (entry.expiresAt > Date.now()) return entry.message;
      retained.delete(id);
      return undefined;
    },

    async clearRetained(channel, key) {
      if (closed) throw new Error('The pub/sub is closed');
      retained.delete(retainedKey(channel, key));
    },

    async subscribe(channel, handler) {
      if (closed) throw new Error('The pub/sub is closed');
      // Wrapped so the same function can be subscribed twice and unsubscribed independently.
      const entry: MessageHandler = (message) => handler(message);
      let handlers = channels.get(channel);
      if (!handlers) channels.set(channel, (handlers = new Set()));
      handlers.add(entry);
      return async () => {
        handlers.delete(entry);
        if (handlers.size === 0 && channels.get(channel) === handlers) channels.delete(channel);
      };
    },

    // One process: a subscription cannot be cut off from its publishers.
    watchSubscriptions() {
      return () => undefined;
    },

    async ping() {},

    async close() {
      closed = true;
      channels.clear();
      retained.clear();
    },
  };
}

export function deliver(log: Logger, channel: string, handler: MessageHandler, message: string): void {
  try {
    handler(message);
  } catch (error) {
    log.error({ err: error, channel }, 'pub/sub handler failed');
  }
}
