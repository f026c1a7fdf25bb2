import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { captureLog, type CapturedLog } from '../../../test/support/log.js';
import { deleteKeys, testRedisUrl, uniquePrefix } from '../../../test/support/redis.js';
import { createBullmqQueue } from './bullmq.js';
import { createMemoryQueue } from './memory.js';
import type { Delivery, JobQueue } from './port.js';
import { sleep, waitUntil } from '../../../test/support/wait.js';

/**
 * One contract, every transport: the in-process queue must deliver like BullMQ so that the
 * embedded profile exercises the same semantics as production. Attempts, payloads and outcomes
 * belong to the job system (job-system.test.ts); a transport only carries deliveries.
 */

const prefixes: string[] = [];

const adapters = [
  {
    kind: 'memory',
    skip: false,
    make: (captured: CapturedLog) => createMemoryQueue({ concurrency: 2, log: captured.log }),
  },
  {
    kind: 'bullmq',
    skip: !testRedisUrl,
    make: (captured: CapturedLog) => {
      const prefix = uniquePrefix('queue');
      prefixes.push(prefix);
      return createBullmqQueue({ url: testRedisUrl!, prefix, concurrency: 2, log: captured.log });
    },
  },
] as const;

afterAll(async () => {
  const url = testRedisUrl;
  if (url) await Promise.all(prefixes.map((prefix) => deleteKeys(url, prefix)));
});

const delivery = (name = 'greet'): Delivery => ({ name, jobId: randomUUID(), deliveryId: randomUUID() });

describe.each(adapters)('job queue contract: $kind', ({ kind, skip, make }) => {
  let queue: JobQueue;
  let captured: CapturedLog;

  const open = () => {
    captured = captureLog('info');
    queue = make(captured);
    return queue;
  };

  afterEach(async () => {
    await queue?.close();
  });

  describe.skipIf(skip)(kind, () => {
    it('carries a delivery to the worker of this process, asynchronously, once started', async () => {
      open();
      expect(queue.kind).toBe(kind);
      const seen: Delivery[] = [];
      const sent = delivery();
      await queue.deliver(sent);
      // Nothing runs before a worker is started, as with BullMQ.
      await sleep(50);
      expect(seen).toEqual([]);
      expect(await queue.state(sent.deliveryId)).toBe('waiting');
      await queue.startWorker(async (d) => void seen.push(d));
      await queue.drain(10_000);
      expect(seen).toEqual([sent]);
      expect(await queue.state(sent.deliveryId)).toBe('completed');
    });

    it('delivers one deliveryId once, however often it is handed over', async () => {
      open();
      const seen: string[] = [];
      const sent = delivery();
      await queue.deliver(sent);
      await queue.deliver(sent);
      await queue.startWorker(async (d) => void seen.push(d.deliveryId));
      await queue.drain(10_000);
      await queue.deliver(sent);
      await queue.drain(10_000);
      expect(seen).toEqual([sent.deliveryId]);
      // Another delivery of the same job is a different delivery.
      const again = { ...sent, deliveryId: randomUUID() };
      await queue.deliver(again);
      await queue.drain(10_000);
      expect(seen).toEqual([sent.deliveryId, again.deliveryId]);
    });

    it('reports each state: delayed, active, completed, failed, and missing for what it never had', async () => {
      open();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const slow = delivery('slow');
      const broken = delivery('broken');
      const later = delivery('later');
      await queue.startWorker(async (d) => {
        if (d.name === 'slow') await gate;
        if (d.name === 'broken') throw new Error('the handler broke');
      });
      await queue.deliver(later, { delayMs: 400 });
      expect(await queue.state(later.deliveryId)).toBe('delayed');
      await queue.deliver(slow);
      await waitUntil(async () => (await queue.state(slow.deliveryId)) === 'active');
      await queue.deliver(broken);
      await waitUntil(async () => (await queue.state(broken.deliveryId)) === 'failed');
      release();
      await queue.drain(10_000);
      expect(await queue.state(slow.deliveryId)).toBe('completed');
      expect(await queue.state(later.deliveryId)).toBe('completed');
      expect(await queue.state(randomUUID())).toBe('missing');
      // A failing handler is logged and the process goes on.
      expect(captured.lines().some((l) => /job delivery failed: the handler broke/.test(l.msg ?? ''))).toBe(true);
    });

    it('runs a delayed delivery no earlier than its delay', async () => {
      open();
      const ranAt: number[] = [];
      await queue.startWorker(async () => void ranAt.push(Date.now()));
      const sentAt = Date.now();
      await queue.deliver(delivery(), { delayMs: 400 });
      await sleep(100);
      expect(ranAt).toEqual([]);
      await queue.drain(10_000);
      expect(ranAt).toHaveLength(1);
      expect(ranAt[0]! - sentAt).toBeGreaterThanOrEqual(390);
    });

    it('never runs more deliveries at once than its concurrency', async () => {
      open();
      let active = 0;
      let peak = 0;
      let done = 0;
      for (let i = 0; i < 6; i += 1) await queue.deliver(delivery('slow'));
      await queue.startWorker(async () => {
        active += 1;
        peak = Math.max(peak, active);
        await sleep(60);
        active -= 1;
        done += 1;
      });
      await queue.drain(20_000);
      expect(done).toBe(6);
      expect(peak).toBeGreaterThanOrEqual(1);
      expect(peak).toBeLessThanOrEqual(2);
    });

    it('drain rejects when deliveries are still waiting after the timeout', async () => {
      open();
      await queue.deliver(delivery());
      // No worker: the delivery waits.
      await expect(queue.drain(200)).rejects.toThrow(/drain/);
    });

    it('close waits for running deliveries to finish, and refuses new ones', async () => {
      open();
      let started = false;
      let finished = false;
      await queue.startWorker(async () => {
        started = true;
        await sleep(300);
        finished = true;
      });
      await queue.deliver(delivery());
      await waitUntil(() => started);
      await queue.close();
      expect(finished).toBe(true);
      await expect(queue.deliver(delivery())).rejects.toThrow(/closed/);
    });

    it('answers ping', async () => {
      open();
      await expect(queue.ping()).resolves.toBeUndefined();
    });
  });
});
