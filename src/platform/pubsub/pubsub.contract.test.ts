import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { captureLog, type CapturedLog } from '../../../test/support/log.js';
import { deleteKeys, testRedisUrl, uniquePrefix } from '../../../test/support/redis.js';
import { createMemoryPubSub } from './memory.js';
import type { PubSub } from './port.js';
import { createRedisPubSub } from './redis.js';

/**
 * One contract for both adapters. "Two processes" are two adapter instances that share a bus
 * (for the in-process adapter: the one instance a process has); "isolated" instances must
 * never see each other's messages (separate processes, or different REDIS_PREFIX values).
 */

const prefixes: string[] = [];
const redisPrefix = () => {
  const prefix = uniquePrefix('pubsub');
  prefixes.push(prefix);
  return prefix;
};

const adapters = [
  {
    kind: 'memory',
    skip: false,
    sharing: (c: CapturedLog): [PubSub, PubSub] => {
      const bus = createMemoryPubSub({ log: c.log });
      return [bus, bus];
    },
    isolated: (c: CapturedLog): [PubSub, PubSub] => [createMemoryPubSub({ log: c.log }), createMemoryPubSub({ log: c.log })],
  },
  {
    kind: 'redis',
    skip: !testRedisUrl,
    sharing: (c: CapturedLog): [PubSub, PubSub] => {
      const prefix = redisPrefix();
      return [
        createRedisPubSub({ url: testRedisUrl!, prefix, log: c.log }),
        createRedisPubSub({ url: testRedisUrl!, prefix, log: c.log }),
      ];
    },
    isolated: (c: CapturedLog): [PubSub, PubSub] => [
      createRedisPubSub({ url: testRedisUrl!, prefix: redisPrefix(), log: c.log }),
      createRedisPubSub({ url: testRedisUrl!, prefix: redisPrefix(), log: c.log }),
    ],
  },
] as const;

afterAll(async () => {
  const url = testRedisUrl;
  if (url) await Promise.all(prefixes.map((prefix) => deleteKeys(url, prefix)));
});

/** Collects messages; `next(n)` waits until n have arrived. */
function inbox() {
  const messages: string[] = [];
  const waiters: Array<() => void> = [];
  return {
    messages,
    handler: (message: string) => {
      messages.push(message);
      for (const wake of waiters.splice(0)) wake();
    },
    async next(count: number, timeoutMs = 5000): Promise<string[]> {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} messages, got ${messages.length}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return messages;
    },
  };
}

describe.each(adapters)('pub/sub contract: $kind', ({ kind, skip, sharing, isolated }) => {
  let opened: PubSub[] = [];
  let captured: CapturedLog;
  const open = (make: (c: CapturedLog) => [PubSub, PubSub]) => {
    captured = captureLog('info');
    const pair = make(captured);
    opened.push(...pair);
    return pair;
  };

  afterEach(async () => {
    await Promise.all([...new Set(opened)].map((p) => p.close()));
    opened = [];
  });

  describe.skipIf(skip)(kind, () => {
    it('delivers a message published right after subscribe resolves, across processes, intact', async () => {
      const [a, b] = open(sharing);
      expect(a.kind).toBe(kind);
      const box = inbox();
      await a.subscribe('stream:1:stop', box.handler);
      // No sleep: once subscribe resolved, the subscription is active.
      const payload = JSON.stringify({ reason: 'user', text: 'stöp ✋' });
      await b.publish('stream:1:stop', payload);
      await b.publish('stream:1:stop', 'second');
      expect(await box.next(2)).toEqual([payload, 'second']);
    });

    it('delivers to every subscriber of a channel and to no other channel', async () => {
      const [a, b] = open(sharing);
      const first = inbox();
      const second = inbox();
      const other = inbox();
      await a.subscribe('jobs', first.handler);
      await b.subscribe('jobs', second.handler);
      await a.subscribe('jobs-other', other.handler);
      await a.publish('jobs', 'hello');
      await a.publish('jobs-other', 'marker');
      expect(await first.next(1)).toEqual(['hello']);
      expect(await second.next(1)).toEqual(['hello']);
      // 'marker' was published after 'hello': once it arrived, 'hello' would have too.
      expect(await other.next(1)).toEqual(['marker']);
    });

    it('stops delivering after unsubscribe, and keeps the channel for the remaining subscribers', async () => {
      const [a, b] = open(sharing);
      const gone = inbox();
      const stays = inbox();
      const unsubscribe = await a.subscribe('chan', gone.handler);
      await a.subscribe('chan', stays.handler);
      await b.publish('chan', 'one');
      await gone.next(1);
      await stays.next(1);
      await unsubscribe();
      await unsubscribe(); // twice is harmless
      await b.publish('chan', 'two');
      expect(await stays.next(2)).toEqual(['one', 'two']);
      expect(gone.messages).toEqual(['one']);
    });

    it('can subscribe again after the last subscriber left', async () => {
      const [a, b] = open(sharing);
      const box = inbox();
      const unsubscribe = await a.subscribe('again', box.handler);
      await unsubscribe();
      // Concurrent subscribe/unsubscribe must settle on "subscribed".
      const [, off] = await Promise.all([unsubscribe(), a.subscribe('again', box.handler)]);
      await b.publish('again', 'back');
      expect(await box.next(1)).toEqual(['back']);
      await off();
    });

    it('keeps isolated buses (other process or other prefix) apart', async () => {
      const [a, b] = open(isolated);
      const mine = inbox();
      const theirs = inbox();
      await a.subscribe('shared-name', mine.handler);
      await b.subscribe('shared-name', theirs.handler);
      await b.publish('shared-name', 'for b only');
      expect(await theirs.next(1)).toEqual(['for b only']);
      await a.publish('shared-name', 'for a only');
      expect(await mine.next(1)).toEqual(['for a only']);
      expect(theirs.messages).toEqual(['for b only']);
    });

    it('logs a throwing handler and still delivers to the others', async () => {
      const [a, b] = open(sharing);
      const box = inbox();
      await a.subscribe('fragile', () => {
        throw new Error('handler bug');
      });
      await a.subscribe('fragile', box.handler);
      await b.publish('fragile', 'still here');
      expect(await box.next(1)).toEqual(['still here']);
      expect(captured.lines().some((l) => l.level === 50 && l.msg === 'pub/sub handler failed')).toBe(true);
    });

    it('a retained publish reaches the subscribers and stays readable by every process until cleared', async () => {
      const [a, b] = open(sharing);
      const box = inbox();
      await a.subscribe('stops', box.handler);
      await b.publishRetained('stops', 'chat-1:s1', 'stop s1', 10_000);
      expect(await box.next(1)).toEqual(['stop s1']);
      // Retained before delivery: whoever receives the message can already read it.
      expect(await a.retained('stops', 'chat-1:s1')).toBe('stop s1');
      expect(await b.retained('stops', 'chat-1:s1')).toBe('stop s1');
      expect(await a.retained('stops', 'chat-1:other')).toBeUndefined();
      expect(await a.retained('other-channel', 'chat-1:s1')).toBeUndefined();
      await a.clearRetained('stops', 'chat-1:s1');
      await a.clearRetained('stops', 'chat-1:s1'); // twice is harmless
      expect(await b.retained('stops', 'chat-1:s1')).toBeUndefined();
    });

    it('a retained message with no subscriber is kept; a new one replaces it; it expires after its ttl', async () => {
      const [a, b] = open(sharing);
      await a.publishRetained('early', 'k', 'first', 10_000);
      await a.publishRetained('early', 'k', 'second', 150);
      expect(await b.retained('early', 'k')).toBe('second');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await b.retained('early', 'k')).toBeUndefined();
    });

    it('keeps retained messages of isolated buses apart', async () => {
      const [a, b] = open(isolated);
      await a.publishRetained('early', 'k', 'for a', 10_000);
      expect(await b.retained('early', 'k')).toBeUndefined();
      expect(await a.retained('early', 'k')).toBe('for a');
    });

    it('answers ping and refuses use after close', async () => {
      const [a] = open(isolated);
      await expect(a.ping()).resolves.toBeUndefined();
      await a.close();
      await expect(a.publish('x', 'y')).rejects.toThrow(/closed/);
      await expect(a.subscribe('x', () => undefined)).rejects.toThrow(/closed/);
      await expect(a.publishRetained('x', 'k', 'y', 1000)).rejects.toThrow(/closed/);
      await expect(a.retained('x', 'k')).rejects.toThrow(/closed/);
    });
  });
});
