/** Fire-and-forget messages between API processes (for example: stop this stream). */
export interface PubSub {
  readonly kind: 'memory' | 'redis';
  publish(channel: string, message: string): Promise<void>;
  /** Resolves once the subscription is active; the returned function unsubscribes. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
