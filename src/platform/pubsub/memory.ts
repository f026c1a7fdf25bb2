import type { Logger } from 'pino';
import type { MessageHandler, PubSub } from './port.js';

/**
 * The embedded profile's pub/sub: one process, so a map of handlers. Delivery is asynchronous
 * (never inside `publish`) and a throwing handler is logged, exactly as on the Redis adapter.
 */
export function createMemoryPubSub(options: { log: Logger }): PubSub {
  const { log } = options;
  const channels = new Map<string, Set<MessageHandler>>();
  let closed = false;

  return {
    kind: 'memory',

    async publish(channel, message) {
      if (closed) throw new Error('The pub/sub is closed');
      const handlers = channels.get(channel);
      if (!handlers?.size) return;
      // Snapshot now: like Redis, a message reaches the subscribers active when it was published.
      const targets = [...handlers];
      setImmediate(() => {
        for (const handler of targets) deliver(log, channel, handler, message);
      });
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

    async ping() {},

    async close() {
      closed = true;
      channels.clear();
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
