/** A bounded wait on a dependency (Redis, the database, the queue) ran out. */
export class DependencyTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`Timed out after ${ms} ms ${what}`);
    this.name = 'DependencyTimeoutError';
  }
}

/**
 * Rejects with DependencyTimeoutError when `promise` has not settled after `ms`. The slower
 * promise keeps running; its late rejection is swallowed rather than reported as unhandled.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DependencyTimeoutError(what, ms)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
