/** A rate in DRF syntax, such as `20/minute`, `30/hour`, `5/s`. */
export type RateString = string;

export interface RateDecision {
  allowed: boolean;
  /** Calls the rate allows per window. */
  limit: number;
  /** Calls left in the current window after this one. */
  remaining: number;
  /** Seconds until the next call would be allowed (0 when allowed). */
  retryAfterSeconds: number;
  /** Whole seconds until the current window ends and the allowance is full again (at least 1). */
  resetSeconds: number;
}

/**
 * Counts calls per key within fixed windows (the window starts at a key's first call), shared
 * by every API process on the Redis adapter.
 */
export interface RateLimiter {
  readonly kind: 'memory' | 'redis';
  /**
   * Counts one call against `key` and says whether it is within `rate`. `scope` names the
   * throttle (a bounded set: chat_messages, login:ip, ...) for whoever reports refusals.
   */
  consume(key: string, rate: RateString, scope?: string): Promise<RateDecision>;
  close(): Promise<void>;
}
