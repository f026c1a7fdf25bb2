import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { captureLog, type CapturedLog } from '../../../test/support/log.js';
import { deleteKeys, testRedisUrl, uniquePrefix } from '../../../test/support/redis.js';
import { createBullmqQueue, fromBullmqJobId, toBullmqJobId } from './bullmq.js';
import { JobPayloadError, UnrecoverableJobError, createJobs, defineJob } from './jobs.js';
import { createMemoryQueue } from './memory.js';
import type { JobContext, JobQueue } from './port.js';

/**
 * One contract, every adapter: the in-process queue must behave like BullMQ so that the
 * embedded profile exercises the same job semantics as production.
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

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
    it('runs a job with its payload parsed by the schema, asynchronously, with a context', async () => {
      open();
      const seen: Array<{ payload: unknown; context: JobContext }> = [];
      const jobs = createJobs(queue, [
        defineJob({
          name: 'greet',
          payload: z.object({ who: z.string(), times: z.number().int().default(1) }),
          async handler(payload, context) {
            seen.push({ payload, context });
          },
        }),
      ]);
      expect(queue.kind).toBe(kind);
      const { jobId } = await jobs.enqueue('greet', { who: 'Ada' });
      // Nothing runs before a worker is started, as with BullMQ.
      await sleep(50);
      expect(seen).toEqual([]);
      await queue.startWorker();
      await queue.drain(10_000);
      expect(seen).toEqual([
        { payload: { who: 'Ada', times: 1 }, context: { jobId, attempt: 1, isFinalAttempt: false } },
      ]);
    });

    it('refuses an invalid payload or an unknown job on enqueue', async () => {
      open();
      const ran: unknown[] = [];
      const jobs = createJobs(queue, [
        defineJob({
          name: 'count',
          payload: z.object({ n: z.number().int().positive() }),
          async handler(payload) {
            ran.push(payload);
          },
        }),
      ]);
      // @ts-expect-error -- the registry types the payload
      await expect(jobs.enqueue('count', { n: 'one' })).rejects.toBeInstanceOf(JobPayloadError);
      await expect(jobs.enqueue('count', { n: -1 })).rejects.toThrow(/n: /);
      // @ts-expect-error -- and the job name
      await expect(jobs.enqueue('nope', { n: 1 })).rejects.toThrow(/Unknown job "nope"/);
      await expect(queue.enqueue('count', { n: 1 }, { delayMs: -5 })).rejects.toThrow(/delayMs/);
      await queue.startWorker();
      await queue.drain(10_000);
      expect(ran).toEqual([]);
    });

    it('validates the payload again before the handler runs and fails such a job without retrying', async () => {
      open();
      // The schema changes between enqueue and run, as when producer and worker run different versions.
      let accept = true;
      let runs = 0;
      const jobs = createJobs(queue, [
        defineJob({
          name: 'strict',
          payload: z.object({ n: z.number() }).refine(() => accept, 'no longer accepted'),
          attempts: 3,
          backoffMs: 10,
          async handler() {
            runs += 1;
          },
        }),
      ]);
      await jobs.enqueue('strict', { n: 1 });
      accept = false;
      await queue.startWorker();
      await queue.drain(10_000);
      expect(runs).toBe(0);
      expect(captured.lines().some((l) => l.level === 50 && /no longer accepted/.test(l.msg ?? ''))).toBe(true);
    });

    it('retries a failing job with exponential backoff and flags the final attempt', async () => {
      open();
      const runs: Array<{ at: number; context: JobContext }> = [];
      const backoffMs = 150;
      const jobs = createJobs(queue, [
        defineJob({
          name: 'flaky',
          payload: z.object({}),
          attempts: 3,
          backoffMs,
          async handler(_payload, context) {
            runs.push({ at: Date.now(), context });
            if (context.attempt < 3) throw new Error(`boom ${context.attempt}`);
          },
        }),
      ]);
      await queue.startWorker();
      const { jobId } = await jobs.enqueue('flaky', {}, { jobId: 'flaky:1' });
      await queue.drain(20_000);
      expect(runs.map((r) => r.context)).toEqual([
        { jobId, attempt: 1, isFinalAttempt: false },
        { jobId, attempt: 2, isFinalAttempt: false },
        { jobId, attempt: 3, isFinalAttempt: true },
      ]);
      const [first, second, third] = runs.map((r) => r.at) as [number, number, number];
      // Lower bounds only (a loaded machine may be late, never early): backoff, then twice that.
      expect(second - first).toBeGreaterThanOrEqual(backoffMs - 15);
      expect(third - second).toBeGreaterThanOrEqual(2 * backoffMs - 15);
      const retries = captured.lines().filter((l) => l.level === 40 && /will retry/.test(l.msg ?? ''));
      expect(retries).toHaveLength(2);
    });

    it('gives up after the last attempt, logs it and keeps the process alive', async () => {
      open();
      let runs = 0;
      let unrecoverableRuns = 0;
      const jobs = createJobs(queue, [
        defineJob({
          name: 'doomed',
          payload: z.object({}),
          attempts: 2,
          backoffMs: 10,
          async handler() {
            runs += 1;
            throw new Error('always fails');
          },
        }),
        defineJob({
          name: 'hopeless',
          payload: z.object({}),
          attempts: 5,
          backoffMs: 10,
          async handler() {
            unrecoverableRuns += 1;
            throw new UnrecoverableJobError('retrying cannot help');
          },
        }),
      ]);
      await queue.startWorker();
      await jobs.enqueue('doomed', {});
      await jobs.enqueue('hopeless', {});
      await queue.drain(20_000);
      expect(runs).toBe(2);
      expect(unrecoverableRuns).toBe(1);
      // BullMQ emits 'failed' (which logs) just after the job leaves the queue: wait for the line.
      const failedJobs = () =>
        captured
          .lines()
          .filter((l) => l.level === 50 && /failed for good/.test(l.msg ?? ''))
          .map((l) => l.job)
          .sort();
      for (let i = 0; i < 100 && failedJobs().length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(failedJobs()).toEqual(['doomed', 'hopeless']);
      // The worker still takes jobs afterwards.
      await jobs.enqueue('doomed', {});
      await queue.drain(20_000);
      expect(runs).toBe(4);
    });

    it('runs a job once per job id, however often it is enqueued, and scopes ids by job name', async () => {
      open();
      const ran: string[] = [];
      const handler = (tag: string) => async (payload: { n: number }, context: JobContext) => {
        ran.push(`${tag}:${context.jobId}:${payload.n}`);
      };
      const jobs = createJobs(queue, [
        defineJob({ name: 'a', payload: z.object({ n: z.number() }), handler: handler('a') }),
        defineJob({ name: 'b', payload: z.object({ n: z.number() }), handler: handler('b') }),
      ]);
      // Ids with ':' and '/' are fine on both adapters (BullMQ forbids ':' in its own ids).
      const id = 'document:42/ingest';
      const results = [
        await jobs.enqueue('a', { n: 1 }, { jobId: id }),
        await jobs.enqueue('a', { n: 2 }, { jobId: id }),
        await jobs.enqueue('b', { n: 3 }, { jobId: id }),
      ];
      expect(results.map((r) => r.jobId)).toEqual([id, id, id]);
      await queue.startWorker();
      await queue.drain(10_000);
      // Still the same job after it completed.
      await jobs.enqueue('a', { n: 4 }, { jobId: id });
      await queue.drain(10_000);
      expect(ran.sort()).toEqual([`a:${id}:1`, `b:${id}:3`]);
    });

    it('runs a delayed job no earlier than its delay', async () => {
      open();
      const ranAt: number[] = [];
      const jobs = createJobs(queue, [
        defineJob({
          name: 'later',
          payload: z.object({}),
          async handler() {
            ranAt.push(Date.now());
          },
        }),
      ]);
      await queue.startWorker();
      const enqueuedAt = Date.now();
      await jobs.enqueue('later', {}, { delayMs: 400 });
      await sleep(100);
      expect(ranAt).toEqual([]);
      await queue.drain(10_000);
      expect(ranAt).toHaveLength(1);
      expect(ranAt[0]! - enqueuedAt).toBeGreaterThanOrEqual(390);
    });

    it('never runs more jobs at once than its concurrency', async () => {
      open();
      let active = 0;
      let peak = 0;
      let done = 0;
      const jobs = createJobs(queue, [
        defineJob({
          name: 'slow',
          payload: z.object({ i: z.number() }),
          async handler() {
            active += 1;
            peak = Math.max(peak, active);
            await sleep(60);
            active -= 1;
            done += 1;
          },
        }),
      ]);
      for (let i = 0; i < 6; i += 1) await jobs.enqueue('slow', { i });
      await queue.startWorker();
      await queue.drain(20_000);
      expect(done).toBe(6);
      expect(peak).toBeGreaterThanOrEqual(1);
      expect(peak).toBeLessThanOrEqual(2);
    });

    it('drain rejects when jobs are still waiting after the timeout', async () => {
      open();
      const jobs = createJobs(queue, [defineJob({ name: 'idle', payload: z.object({}), handler: async () => {} })]);
      await jobs.enqueue('idle', {});
      // No worker: the job waits.
      await expect(queue.drain(200)).rejects.toThrow(/drain/);
    });

    it('close waits for running jobs to finish', async () => {
      open();
      let started = false;
      let finished = false;
      const jobs = createJobs(queue, [
        defineJob({
          name: 'long',
          payload: z.object({}),
          async handler() {
            started = true;
            await sleep(300);
            finished = true;
          },
        }),
      ]);
      await queue.startWorker();
      await jobs.enqueue('long', {});
      await until(() => started);
      await queue.close();
      expect(finished).toBe(true);
      await expect(jobs.enqueue('long', {})).rejects.toThrow(/closed/);
    });

    it('answers ping and refuses registrations after the worker started', async () => {
      open();
      await expect(queue.ping()).resolves.toBeUndefined();
      await queue.startWorker();
      expect(() => queue.register(defineJob({ name: 'late', payload: z.object({}), handler: async () => {} }))).toThrow(
        /before starting/,
      );
    });
  });
});

describe('BullMQ job ids', () => {
  it('maps any job id to a BullMQ id without ":" that is not an integer, reversibly and injectively', () => {
    const ids = ['1', '42', 'a:b', 'a/b', 'a%3Ab', 'x'.repeat(200), 'ünï'];
    const mapped = ids.map((id) => toBullmqJobId('job', id));
    for (const [i, bullId] of mapped.entries()) {
      expect(bullId).not.toContain(':');
      expect(`${Number.parseInt(bullId, 10)}`).not.toBe(bullId);
      expect(fromBullmqJobId(bullId)).toBe(ids[i]);
    }
    expect(new Set(mapped).size).toBe(ids.length);
    expect(toBullmqJobId('a', 'b/c')).not.toBe(toBullmqJobId('a/b', 'c'));
  });
});
