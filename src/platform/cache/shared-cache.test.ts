import { afterAll, describe, expect, it } from 'vitest';
import { captureLog } from '../../../test/support/log.js';
import { deleteKeys, testRedisUrl, uniquePrefix } from '../../../test/support/redis.js';
import { startTcpProxy } from '../../../test/support/tcp-proxy.js';
import { waitUntil } from '../../../test/support/wait.js';
import { createMemoryPubSub } from '../pubsub/memory.js';
import type { PubSub } from '../pubsub/port.js';
import { createRedisPubSub } from '../pubsub/redis.js';
import { createSharedCache } from './shared-cache.js';
import { createTtlCache } from './ttl-cache.js';

const settings = { enabled: true, ttlMs: 60_000, maxEntries: 100 };

/** A loader that counts its calls. */
function counter(value = 'v', tags = ['t']) {
  const loader = async () => {
    loader.calls++;
    return { value, tags };
  };
  loader.calls = 0;
  return loader;
}

/** A listening cache on an in-process bus, its region `r`, and a gate (`slow`) that loads await until `release()`. */
async function listeningWithSlowLoad() {
  const { log } = captureLog();
  const bus = createMemoryPubSub({ log });
  const cache = createSharedCache({ pubsub: bus, log, ...settings });
  await cache.listen();
  let release!: () => void;
  const slow = new Promise<void>((resolve) => (release = resolve));
  return { bus, cache, region: cache.region<string>('r'), slow, release };
}

describe('ttl cache', () => {
  it('expires entries at their own expiry or the TTL, evicts the least recently used, drops by tag', () => {
    let now = 1000;
    const cache = createTtlCache<string>({ ttlMs: 100, maxEntries: 2, now: () => now });
    cache.set('a', 'A', { tags: ['x'] });
    cache.set('b', 'B', { tags: ['y'], expiresAt: now + 10 });
    expect(cache.get('a')).toBe('A'); // a is now the most recently used
    now += 11;
    expect(cache.get('b')).toBeUndefined();
    cache.set('b', 'B');
    cache.set('c', 'C'); // full: a, now the least recently used, goes
    expect(cache.size).toBe(2);
    expect(cache.get('a')).toBeUndefined();
    cache.set('d', 'D', { tags: ['x', 'z'] });
    cache.invalidateTags(['z']);
    expect(cache.get('d')).toBeUndefined();
    now += 100;
    expect(cache.get('c')).toBeUndefined();
    cache.set('gone', 'G', { expiresAt: now - 1 });
    expect(cache.get('gone')).toBeUndefined();
  });
});

describe('shared cache (in-process bus)', () => {
  it('serves only once subscribed; an invalidation drops the entry here and in the other process', async () => {
    const { log } = captureLog();
    const bus = createMemoryPubSub({ log });
    const one = createSharedCache({ pubsub: bus, log, ...settings });
    const two = createSharedCache({ pubsub: bus, log, ...settings });
    const load = counter();
    const region = one.region<string>('r');
    expect(await region.through('k', load)).toBe('v');
    expect(await region.through('k', load)).toBe('v');
    expect(load.calls).toBe(2); // not listening yet: bypassed
    await Promise.all([one.listen(), two.listen()]);
    expect(one.serving).toBe(true);
    await region.through('k', load);
    await region.through('k', load);
    expect(load.calls).toBe(3);

    await two.invalidate('t');
    await waitUntil(async () => {
      await region.through('k', load);
      return load.calls === 4;
    }, 1000);
    await Promise.all([one.close(), two.close(), bus.close()]);
  });

  it('does not store a load that an invalidation overtook, nor a negative answer', async () => {
    const { bus, cache, region, slow, release } = await listeningWithSlowLoad();
    const pending = region.through('k', async () => {
      await slow;
      return { value: 'old', tags: ['t'] };
    });
    await cache.invalidate('t');
    release();
    expect(await pending).toBe('old');
    const load = counter('new');
    expect(await region.through('k', load)).toBe('new');
    expect(load.calls).toBe(1);

    let misses = 0;
    const none = async () => void misses++;
    await region.through('n', none);
    await region.through('n', none);
    expect(misses).toBe(2);
    await cache.close();
    await bus.close();
  });

  it('concurrent misses of one key share one load (its answer or its error); a miss after an invalidation starts its own', async () => {
    const { bus, cache, region, slow, release } = await listeningWithSlowLoad();
    let calls = 0;
    const load = async () => {
      const n = ++calls;
      await slow;
      return { value: `v${n}`, tags: ['t'] };
    };
    const burst = Promise.all(Array.from({ length: 10 }, () => region.through('k', load)));
    const otherKey = region.through('other', load);
    expect(calls).toBe(2);
    // Any invalidation: the load in flight may have read what changed, so a later miss does not join it.
    await cache.invalidate('unrelated');
    const afterChange = region.through('k', load);
    expect(calls).toBe(3);
    release();
    expect(await burst).toEqual(Array(10).fill('v1'));
    expect(await otherKey).toBe('v2');
    expect(await afterChange).toBe('v3');

    const failing = async () => {
      calls++;
      throw new Error('database down');
    };
    calls = 0;
    const failed = await Promise.allSettled(Array.from({ length: 5 }, () => region.through('f', failing)));
    expect(failed.every((r) => r.status === 'rejected')).toBe(true);
    expect(calls).toBe(1);
    await expect(region.through('f', failing)).rejects.toThrow('database down');
    expect(calls).toBe(2);
    await cache.close();
    await bus.close();
  });

  it('an invalidation of other tags during a load does not keep it from being stored', async () => {
    const { bus, cache, region, slow, release } = await listeningWithSlowLoad();
    const pending = region.through('k', async () => {
      await slow;
      return { value: 'kept', tags: ['mine'] };
    });
    await cache.invalidate('someone-else');
    release();
    expect(await pending).toBe('kept');
    const load = counter('reloaded', ['mine']);
    expect(await region.through('k', load)).toBe('kept');
    expect(load.calls).toBe(0);
    await cache.close();
    await bus.close();
  });

  it('a lost subscription clears the cache and bypasses it until the subscription is back', async () => {
    const { log } = captureLog();
    const bus = createMemoryPubSub({ log });
    let watcher: ((receiving: boolean) => void) | undefined;
    const watched: PubSub = { ...bus, watchSubscriptions: (listener) => ((watcher = listener), () => undefined) };
    const cache = createSharedCache({ pubsub: watched, log, ...settings });
    await cache.listen();
    const region = cache.region<string>('r');
    const load = counter();
    await region.through('k', load);
    await region.through('k', load);
    expect(load.calls).toBe(1);

    watcher!(false);
    expect(cache.serving).toBe(false);
    await region.through('k', load);
    await region.through('k', load);
    expect(load.calls).toBe(3);

    watcher!(true);
    expect(cache.serving).toBe(true);
    await region.through('k', load);
    await region.through('k', load);
    expect(load.calls).toBe(4);
    await cache.close();
    await bus.close();
  });

  it('turned off: never stores, never subscribes', async () => {
    const { log } = captureLog();
    const bus = createMemoryPubSub({ log });
    const cache = createSharedCache({ pubsub: bus, log, ...settings, enabled: false });
    await cache.listen();
    const load = counter();
    await cache.region<string>('r').through('k', load);
    await cache.region<string>('r').through('k', load);
    expect(load.calls).toBe(2);
    expect(cache.serving).toBe(false);
    await cache.close();
    await bus.close();
  });
});

describe.skipIf(!testRedisUrl)('shared cache on Redis: the subscribing connection cut off', () => {
  const prefix = uniquePrefix('cache');
  afterAll(async () => {
    await deleteKeys(testRedisUrl!, prefix);
  });

  it('bypasses the cache while cut off (an invalidation sent meanwhile is lost) and serves again once re-subscribed', async () => {
    const { log } = captureLog('silent');
    const redis = new URL(testRedisUrl!);
    const proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    const proxied = new URL(testRedisUrl!);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    const here = createRedisPubSub({ url: proxied.toString(), prefix, log });
    const there = createRedisPubSub({ url: testRedisUrl!, prefix, log });
    const cache = createSharedCache({ pubsub: here, log, ...settings });
    const writer = createSharedCache({ pubsub: there, log, ...settings });
    try {
      await cache.listen();
      const region = cache.region<string>('r');
      let value = 'before';
      let calls = 0;
      const load = async () => (calls++, { value, tags: ['t'] });
      expect(await region.through('k', load)).toBe('before');
      expect(await region.through('k', load)).toBe('before');
      expect(calls).toBe(1);

      await proxy.stop();
      await waitUntil(() => !cache.serving, 5000);
      value = 'after';
      await writer.invalidate('t'); // published while this process cannot hear it
      expect(await region.through('k', load)).toBe('after');

      await proxy.start();
      await waitUntil(() => cache.serving, 10_000);
      calls = 0;
      expect(await region.through('k', load)).toBe('after');
      expect(await region.through('k', load)).toBe('after');
      expect(calls).toBe(1);
      // Re-subscribed: invalidations arrive again.
      value = 'again';
      await writer.invalidate('t');
      await waitUntil(async () => (await region.through('k', load)) === 'again', 1000);
    } finally {
      await Promise.all([cache.close(), writer.close()]);
      await Promise.all([here.close(), there.close()]);
      await proxy.close();
    }
  });
});
