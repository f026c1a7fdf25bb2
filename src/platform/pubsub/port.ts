export type MessageHandler = (message: string) => void;

/**
 * Fire-and-forget messages between API processes (for example: stop this stream). Delivery is
 * at most once, to subscribers active when the message is published; nothing is stored.
 */
export interface PubSub {
  readonly kind: 'memory' | 'redis';
  publish(channel: string, message: string): Promise<void>;
  /** Resolves once the subscription is active; the returned function unsubscribes. */
  subscribe(channel: string, handler: MessageHandler): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
