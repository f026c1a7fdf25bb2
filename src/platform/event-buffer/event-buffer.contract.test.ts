import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { deleteKeys, testRedisUrl, uniquePrefix } from '../../../test/support/redis.js';
import { createMemoryEventBuffer } from './memory.js';
import type { BufferedEvent, EventBuffer, EventBufferLimits } from './port.js';
import { createRedisEventBuffer } from './redis.js';

/** One contract for both adapters; "sharing" gives two API processes' buffers of one deployment. */
const log = pino({ level: 'silent' });
const prefixes: string[] = [];
const limits: EventBufferLimits = { ttlMs: 60_000, maxEvents: 1000 };

const adapters = [
  {
    kind: 'memory',
    skip: false,
    sharing: (l: EventBufferLimits): [EventBuffer, EventBuffer] => {
      const buffer = createMemoryEventBuffer(l);
      return [buffer, buffer];
    },
  },
  {
    kind: 'redis',
    skip: !testRedisUrl,
    sharing: (l: EventBufferLimits): [EventBuffer, EventBuffer] => {
      const prefix = uniquePrefix('evbuf');
      prefixes.push(prefix);
      return [
        createRedisEventBuffer({ url: testRedisUrl!, prefix, log, ...l }),
        createRedisEventBuffer({ url: testRedisUrl!, prefix, log, ...l }),
      ];
    },
  },
] as const;

afterAll(async () => {
  if (testRedisUrl) await Promise.all(prefixes.map((prefix) => deleteKeys(testRedisUrl!, prefix)));
});

const ev = (id: number, event = 'delta', data: unknown = { text: `t${id}` }): BufferedEvent => ({ id, event, data: JSON.stringify(data) });

describe.each(adapters)('event buffer contract: $kind', ({ kind, skip, sharing }) => {
  let opened: EventBuffer[] = [];
  const open = (l: EventBufferLimits = limits) => {
    const pair = sharing(l);
    opened.push(...pair);
    return pair;
  };
  afterEach(async () => {
    await Promise.all([...new Set(opened)].map((b) => b.close()));
    opened = [];
  });

  describe.skipIf(skip)(kind, () => {
    it('keeps the events in order for every process; reads from the start or after an id; null for an unknown key', async () => {
      const [a, b] = open();
      expect(a.kind).toBe(kind);
      // Not awaited one by one: appends apply in call order.
      await Promise.all([a.append('chat:s1', 'run-1', ev(1)), a.append('chat:s1', 'run-1', ev(2)), a.append('chat:s1', 'run-1', ev(3, 'done', { ok: 'ü ✓' }))]);
      expect(await b.read('chat:s1', 0, 0)).toEqual([ev(1), ev(2), ev(3, 'done', { ok: 'ü ✓' })]);
      expect(await b.read('chat:s1', 2, 0)).toEqual([ev(3, 'done', { ok: 'ü ✓' })]);
      expect(await b.read('chat:s1', 3, 0)).toEqual([]);
      expect(await b.read('chat:other', 0, 0)).toBeNull();
    });

    it('a waiting read returns as soon as another process appends, with only the new events', async () => {
      const [a, b] = open();
      await a.append('live', 'r', ev(1));
      const started = Date.now();
      const waiting = b.read('live', 1, 5000);
      const second = b.read('live', 1, 5000); // two readers of one stream
      await new Promise((resolve) => setTimeout(resolve, 100));
      await a.append('live', 'r', ev(2));
      expect(await waiting).toEqual([ev(2)]);
      expect(await second).toEqual([ev(2)]);
      expect(Date.now() - started).toBeLessThan(2000);
      // Nothing new: an empty list after the wait.
      const idle = Date.now();
      expect(await b.read('live', 2, 300)).toEqual([]);
      expect(Date.now() - idle).toBeGreaterThanOrEqual(250);
    });

    it('a new run (event 1) replaces the buffer; the older run appending under the key is ignored', async () => {
      const [a, b] = open();
      await a.append('reused', 'old', ev(1));
      await a.append('reused', 'old', ev(2));
      await b.append('reused', 'new', ev(1, 'delta', { text: 'new' }));
      await a.append('reused', 'old', ev(3));
      await b.append('reused', 'new', ev(2, 'done', {}));
      expect(await a.read('reused', 0, 0)).toEqual([ev(1, 'delta', { text: 'new' }), ev(2, 'done', {})]);
    });

    it('forgets a buffer its ttl after the last event, and keeps about maxEvents events', async () => {
      const [a, b] = open({ ttlMs: 400, maxEvents: 5 });
      for (let id = 1; id <= 300; id += 1) void a.append('long', 'r', ev(id));
      await a.append('long', 'r', ev(301));
      const kept = (await b.read('long', 0, 0))!;
      expect(kept.at(-1)).toEqual(ev(301));
      // Redis trims whole nodes of its stream (100 entries by default): approximately.
      expect(kept.length).toBeGreaterThanOrEqual(5);
      expect(kept.length).toBeLessThanOrEqual(kind === 'memory' ? 5 : 105);
      expect(kept.map((e) => e.id)).toEqual(kept.map((_, i) => 301 - kept.length + 1 + i));
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(await b.read('long', 0, 0)).toBeNull();
    });
  });
});
