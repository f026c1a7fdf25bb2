export { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` every 25 ms until it returns something other than undefined or false, and
 * returns that; throws after `timeoutMs`.
 */
export async function waitUntil<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
