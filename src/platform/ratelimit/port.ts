/** A rate in DRF syntax, such as `20/minute`, `30/hour`, `5/s`. */
export type RateString = string;

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  /** Seconds until the next call would be allowed (0 when allowed). */
  retryAfterSeconds: number;
}

/** Counts calls per key within a fixed window, shared by every API process on the Redis adapter. */
export interface RateLimiter {
  readonly kind: 'memory' | 'redis';
  consume(key: string, rate: RateString): Promise<RateDecision>;
  close(): Promise<void>;
}
