export type MessageHandler = (message: string) => void;

/**
 * Fire-and-forget messages between API processes (for example: stop this stream). Delivery is
 * at most once, to subscribers active when the message is published. A retained publish also
 * keeps the message under a key for a while, so a process that was not listening yet (a stream
 * that has not started) can still read it.
 */
export interface PubSub {
  readonly kind: 'memory' | 'redis';
  publish(channel: string, message: string): Promise<void>;
  /**
   * Keeps `message` under (`channel`, `key`) for `ttlMs` and publishes it on `channel`, in one
   * step: whoever receives the message can already read it with `retained`. A later retained
   * publish with the same key replaces it.
   */
  publishRetained(channel: string, key: string, message: string, ttlMs: number): Promise<void>;
  /** The message retained under (`channel`, `key`) and not yet expired or cleared, if any. */
  retained(channel: string, key: string): Promise<string | undefined>;
  /** Forgets the message retained under (`channel`, `key`); nothing retained is fine. */
  clearRetained(channel: string, key: string): Promise<void>;
  /** Resolves once the subscription is active; the returned function unsubscribes. */
  subscribe(channel: string, handler: MessageHandler): Promise<() => Promise<void>>;
  /**
   * Tells `listener` when this process's subscriptions stop receiving (`false`: the subscribing
   * connection was lost, messages published from now on may never arrive) and when they receive
   * again (`true`: reconnected and every channel re-subscribed). The in-process adapter never
   * loses them. Returns a function that stops the notifications.
   */
  watchSubscriptions(listener: (receiving: boolean) => void): () => void;
  ping(): Promise<void>;
  close(): Promise<void>;
}
