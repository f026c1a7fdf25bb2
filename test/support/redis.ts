import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** Redis for the Redis-backed adapters' contract tests; those suites are skipped without it. */
export const testRedisUrl = process.env.TEST_REDIS_URL;

/** A key prefix no other test or run uses, so parallel runs on one Redis never collide. */
export function uniquePrefix(label: string): string {
  return `wsai-test-${label}-${randomBytes(5).toString('hex')}`;
}

/** Deletes every key under `prefix` (tests clean up after themselves). */
export async function deleteKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    await redis.quit();
  }
}
