import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { eq, sql } from 'drizzle-orm';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testDatabase, truncateAll, type TestDatabase } from '../../../test/support/db.js';
import { captureLog, type CapturedLog } from '../../../test/support/log.js';
import { deleteKeys, testRedisUrl, uniquePrefix } from '../../../test/support/redis.js';
import type { DbOrTx } from '../../db/client.js';
import { currentRequestId, runWithRequestContext } from '../request-context.js';
import { createBullmqQueue } from './bullmq.js';
import { createJobSystem, type JobSystemSettings } from './job-system.js';
import { type AnyJobDefinition, defineJob, JobPayloadError, JobTimeoutError, UnrecoverableJobError } from './jobs.js';
import * as repo from './jobs.repo.js';
import { backgroundJobs, workerHeartbeats } from './jobs.table.js';
import { createMemoryQueue } from './memory.js';
import type { JobContext, JobFailure, JobQueue } from './port.js';
import { sleep, waitUntil } from '../../../test/support/wait.js';

/**
 * The job system on each transport, on this worker's real database: the outbox, claims and
 * fencing, retries with their hooks, and the reconciler re-driving what a crash or a lost queue
 * stranded. Crashes are simulated at the database level here (a row left running by a process
 * that no longer exists); job-system.faults.test.ts kills real worker processes.
 */

const prefixes: string[] = [];
afterAll(async () => {
  const url = testRedisUrl;
  if (url) await Promise.all(prefixes.map((prefix) => deleteKeys(url, prefix)));
});

const transports = [
  { kind: 'memory', skip: false, make: (log: CapturedLog) => createMemoryQueue({ concurrency: 2, log: log.log }) },
  {
    kind: 'bullmq',
    skip: !testRedisUrl,
    make: (log: CapturedLog, prefix = uniquePrefix('jobs')) => {
      prefixes.push(prefix);
      return createBullmqQueue({ url: testRedisUrl!, prefix, concurrency: 2, log: log.log });
    },
  },
] as const;

const SETTINGS: JobSystemSettings = {
  leaseSeconds: 30,
  // The tests call reconcile() themselves; the timer stays out of the way.
  reconcileIntervalSeconds: 3600,
  deliveryGraceSeconds: 0,
  waitAlertSeconds: 30,
  retentionDays: 7,
  concurrency: 2,
};

/** A pid that belonged to a process which has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe.each(transports)('job system on $kind', ({ kind, skip, make }) => {
  let database: TestDatabase;
  const systems: Array<{ close(): Promise<void> }> = [];
  let captured: CapturedLog;
  const db = () => database.db;
  const row = async (id: string) => (await db().select().from(backgroundJobs).where(eq(backgroundJobs.id, id)))[0]!;

  function system<const Defs extends readonly AnyJobDefinition[]>(
    definitions: Defs,
    options: { queue?: JobQueue; settings?: Partial<JobSystemSettings>; registry?: Registry } = {},
  ) {
    captured ??= captureLog('debug');
    const queue = options.queue ?? make(captured);
    const jobs = createJobSystem(definitions, {
      db: db(),
      queue,
      log: captured.log,
      registry: options.registry ?? new Registry(),
      settings: { ...SETTINGS, ...options.settings },
    });
    systems.push(jobs);
    return jobs;
  }

  beforeEach(async () => {
    database = await testDatabase();
    await truncateAll(database);
    captured = captureLog('debug');
  });

  afterEach(async () => {
    for (const s of systems.splice(0)) await s.close();
  });

  describe.skipIf(skip)(kind, () => {
    it('records a job in the caller transaction and runs it after commit with its payload and request id', async () => {
      const seen: Array<{ payload: unknown; context: Omit<JobContext, 'signal'>; requestId?: string }> = [];
      const jobs = system([
        defineJob({
          name: 'greet',
          payload: z.object({ who: z.string(), times: z.number().int().default(1) }),
          async handler(payload, { signal: _signal, ...context }) {
            seen.push({ payload, context, requestId: currentRequestId() });
          },
        }),
      ]);
      await jobs.startWorker();
      const job = await runWithRequestContext({ requestId: 'req-42' }, () =>
        db().transaction((tx) => jobs.record(tx, 'greet', { who: 'Ada' })),
      );
      expect(await row(job.id)).toMatchObject({ state: 'queued', attempts: 0, requestId: 'req-42', maxAttempts: 3 });
      await jobs.dispatch([job]);
      await jobs.drain(10_000);
      expect(seen).toEqual([
        { payload: { who: 'Ada', times: 1 }, context: { jobId: job.id, attempt: 1, isFinalAttempt: false }, requestId: 'req-42' },
      ]);
      expect(await row(job.id)).toMatchObject({ state: 'done', attempts: 1, leaseUntil: null });
      const outcome = captured.lines().find((l) => l.msg === 'job completed');
      expect(outcome).toMatchObject({ job: 'greet', jobId: job.id, requestId: 'req-42', attempt: 1 });
    });

    it('a job recorded in a transaction that rolls back never exists and never runs', async () => {
      let runs = 0;
      const jobs = system([defineJob({ name: 'never', payload: z.object({}), handler: async () => void (runs += 1) })]);
      await jobs.startWorker();
      await expect(
        db().transaction(async (tx) => {
          await jobs.record(tx, 'never', {});
          throw new Error('the change failed');
        }),
      ).rejects.toThrow('the change failed');
      expect(await jobs.reconcile()).toEqual({ delivered: 0, redriven: 0, failed: 0 });
      await jobs.drain(5_000);
      expect(runs).toBe(0);
      expect(await db().select().from(backgroundJobs)).toEqual([]);
    });

    it('refuses an invalid payload or an unknown job when recording, and records nothing', async () => {
      const jobs = system([defineJob({ name: 'count', payload: z.object({ n: z.number().int().positive() }), handler: async () => {} })]);
      // @ts-expect-error -- the job list types the payload
      await expect(jobs.enqueue('count', { n: 'one' })).rejects.toBeInstanceOf(JobPayloadError);
      await expect(jobs.enqueue('count', { n: -1 })).rejects.toThrow(/n: /);
      // @ts-expect-error -- and the job name
      await expect(jobs.enqueue('nope', { n: 1 })).rejects.toThrow(/Unknown job "nope"/);
      expect(await db().select().from(backgroundJobs)).toEqual([]);
    });

    it('runs a job once per id, however often it is recorded or dispatched', async () => {
      let runs = 0;
      const jobs = system([defineJob({ name: 'once', payload: z.object({}), handler: async () => void (runs += 1) })]);
      await jobs.startWorker();
      const id = randomUUID();
      const first = await jobs.enqueue('once', {}, { id });
      await jobs.enqueue('once', {}, { id });
      await jobs.dispatch([first, first]);
      await jobs.drain(10_000);
      await jobs.enqueue('once', {}, { id });
      await jobs.drain(10_000);
      expect(runs).toBe(1);
      expect(await row(id)).toMatchObject({ state: 'done', attempts: 1 });
    });

    it('retries with exponential backoff, updates the domain in the same transaction, and gives up after the budget', async () => {
      const calls: string[] = [];
      const ranAt: number[] = [];
      const contexts: Array<{ attempt: number; isFinalAttempt: boolean }> = [];
      const jobs = system([
        defineJob({
          name: 'flaky',
          payload: z.object({ n: z.number() }),
          attempts: 3,
          backoffMs: 100,
          async handler(_payload, context) {
            ranAt.push(Date.now());
            contexts.push({ attempt: context.attempt, isFinalAttempt: context.isFinalAttempt });
            throw new Error(`boom ${context.attempt}`);
          },
          async onRetry(tx: DbOrTx, payload, failure: JobFailure) {
            // Inside the transaction that queues the next attempt: the job is already queued again.
            const [current] = await tx.select().from(backgroundJobs);
            calls.push(`retry ${payload.n} ${failure.reason} ${(failure.error as Error).message} ${current!.state}`);
          },
          async onGiveUp(tx: DbOrTx, payload, failure: JobFailure) {
            const [current] = await tx.select().from(backgroundJobs);
            calls.push(`give up ${payload.n} ${failure.reason} ${(failure.error as Error).message} ${current!.state}`);
          },
        }),
      ]);
      await jobs.startWorker();
      const job = await jobs.enqueue('flaky', { n: 7 });
      await jobs.drain(10_000);
      expect(contexts).toEqual([
        { attempt: 1, isFinalAttempt: false },
        { attempt: 2, isFinalAttempt: false },
        { attempt: 3, isFinalAttempt: true },
      ]);
      expect(ranAt[1]! - ranAt[0]!).toBeGreaterThanOrEqual(90);
      expect(ranAt[2]! - ranAt[1]!).toBeGreaterThanOrEqual(190);
      expect(calls).toEqual(['retry 7 failed boom 1 queued', 'retry 7 failed boom 2 queued', 'give up 7 failed boom 3 failed']);
      expect(await row(job.id)).toMatchObject({ state: 'failed', attempts: 3, lastError: 'boom 3', redriven: 0 });
      const levels = captured.lines().filter((l) => l.jobId === job.id && /job failed/.test(l.msg ?? '')).map((l) => l.level);
      expect(levels).toEqual([40, 40, 50]);
    });

    it('an UnrecoverableJobError gives up at once', async () => {
      let runs = 0;
      const reasons: string[] = [];
      const jobs = system([
        defineJob({
          name: 'refused',
          payload: z.object({}),
          async handler() {
            runs += 1;
            throw new UnrecoverableJobError('not allowed');
          },
          onGiveUp: async (_tx, _payload, failure) => void reasons.push(failure.reason),
        }),
      ]);
      await jobs.startWorker();
      const job = await jobs.enqueue('refused', {});
      await jobs.drain(10_000);
      expect(runs).toBe(1);
      expect(reasons).toEqual(['failed']);
      expect(await row(job.id)).toMatchObject({ state: 'failed', attempts: 1, lastError: 'not allowed' });
    });

    it('a stored payload that no longer validates fails without running the handler', async () => {
      let runs = 0;
      const jobs = system([defineJob({ name: 'strict', payload: z.object({ n: z.number() }), handler: async () => void (runs += 1) })]);
      const job = await db().transaction((tx) => jobs.record(tx, 'strict', { n: 1 }));
      // As when the producer ran other code than the worker.
      await db().update(backgroundJobs).set({ payload: { n: 'one' } }).where(eq(backgroundJobs.id, job.id));
      await jobs.startWorker();
      await jobs.dispatch([job]);
      await jobs.drain(10_000);
      expect(runs).toBe(0);
      expect(await row(job.id)).toMatchObject({ state: 'failed', lastError: 'invalid' });
    });

    it('a stale delivery (an id that is no longer the job\u2019s) changes nothing', async () => {
      let runs = 0;
      const jobs = system([defineJob({ name: 'fenced', payload: z.object({}), handler: async () => void (runs += 1) })]);
      await jobs.startWorker();
      const job = await db().transaction((tx) => jobs.record(tx, 'fenced', {}));
      await jobs.dispatch([{ ...job, deliveryId: randomUUID() }]);
      await jobs.queue.drain(10_000);
      expect(runs).toBe(0);
      expect(await row(job.id)).toMatchObject({ state: 'queued', attempts: 0 });
      await jobs.dispatch([job]);
      await jobs.drain(10_000);
      expect(runs).toBe(1);
    });

    it('the reconciler delivers a job whose dispatch failed (the outbox mark), once the queue answers', async () => {
      let runs = 0;
      const jobs = system([defineJob({ name: 'outbox', payload: z.object({}), handler: async () => void (runs += 1) })]);
      const job = await db().transaction((tx) => jobs.record(tx, 'outbox', {}));
      // As after a dispatch that found the queue unreachable.
      await repo.markUndelivered(db(), job.id, job.deliveryId);
      // Younger than the outbox grace: the request that recorded it may still be dispatching it.
      expect((await jobs.reconcile())!.delivered).toBe(0);
      await db().update(backgroundJobs).set({ updatedAt: sql`now() - interval '1 minute'` }).where(eq(backgroundJobs.id, job.id));
      await jobs.startWorker();
      await jobs.drain(10_000);
      expect(runs).toBe(1);
      expect(await row(job.id)).toMatchObject({ state: 'done', redriven: 0 });
    });

    it('a job whose process died between commit and dispatch is found missing from the queue and re-driven', async () => {
      let runs = 0;
      const jobs = system([defineJob({ name: 'orphaned', payload: z.object({}), handler: async () => void (runs += 1) })], {
        settings: { deliveryGraceSeconds: 1 },
      });
      const job = await db().transaction((tx) => jobs.record(tx, 'orphaned', {}));
      // Within the grace period the delivery may still be on its way: left alone.
      expect(await jobs.reconcile()).toEqual({ delivered: 0, redriven: 0, failed: 0 });
      await db()
        .update(backgroundJobs)
        .set({ deliveredAt: sql`now() - interval '5 seconds'`, runAfter: sql`now() - interval '5 seconds'` })
        .where(eq(backgroundJobs.id, job.id));
      await jobs.startWorker();
      await jobs.drain(10_000);
      expect(runs).toBe(1);
      expect(await row(job.id)).toMatchObject({ state: 'done', redriven: 1 });
    });

    it('re-drives a job whose delivery was lost from the queue under a fresh delivery id; the old one is dropped', async () => {
      let runs = 0;
      const definitions = [defineJob({ name: 'lost', payload: z.object({}), handler: async () => void (runs += 1) })];
      const first = system(definitions);
      const job = await first.enqueue('lost', {});
      expect(await first.queue.state(job.deliveryId)).toBe('waiting');
      // The queue loses its data (Redis flushed / the embedded process restarted): a new transport
      // knows nothing of the delivery.
      const jobs = system(definitions);
      await jobs.startWorker();
      await jobs.drain(10_000);
      expect(runs).toBe(1);
      const after = await row(job.id);
      expect(after).toMatchObject({ state: 'done', redriven: 1 });
      expect(after.deliveryId).not.toBe(job.deliveryId);
      // The first transport still holds the old delivery: when it runs, the claim refuses it.
      await first.startWorker();
      await first.queue.drain(10_000);
      expect(runs).toBe(1);
      expect(captured.lines().some((l) => l.msg === 'stale or duplicate delivery ignored')).toBe(true);
    });

    it('a delivery still waiting on the queue is left alone', async () => {
      const jobs = system([defineJob({ name: 'patient', payload: z.object({}), handler: async () => {} })]);
      const job = await jobs.enqueue('patient', {});
      expect(await jobs.reconcile()).toEqual({ delivered: 0, redriven: 0, failed: 0 });
      expect(await row(job.id)).toMatchObject({ deliveryId: job.deliveryId, redriven: 0 });
      expect((await row(job.id)).checkedAt).not.toBeNull();
    });

    it('re-drives a delivery a worker took from the queue but never claimed (it died in between), without waiting for the queue', async () => {
      let runs = 0;
      const queue = make(captured);
      // The first delivery is taken and held, as by a worker killed right after taking it: the
      // queue keeps it `active`, the job stays queued in the database.
      let taken: () => void = () => {};
      const held = new Promise<void>((resolve) => (taken = resolve));
      let release: () => void = () => {};
      const hung = new Promise<void>((resolve) => (release = resolve));
      let first = true;
      const takingQueue: JobQueue = {
        ...queue,
        startWorker: (handler) =>
          queue.startWorker(async (delivery) => {
            if (!first) return handler(delivery);
            first = false;
            taken();
            await hung;
          }),
      };
      const jobs = system([defineJob({ name: 'taken', payload: z.object({}), handler: async () => void (runs += 1) })], { queue: takingQueue });
      try {
        await jobs.startWorker();
        const job = await jobs.enqueue('taken', {});
        await held;
        expect(await queue.state(job.deliveryId)).toBe('active');
        // Seen active once: it may be a worker about to claim it.
        expect(await jobs.reconcile()).toEqual({ delivered: 0, redriven: 0, failed: 0 });
        // Still active and unclaimed a grace later: re-driven under a fresh delivery, which runs.
        expect(await jobs.reconcile()).toEqual({ delivered: 0, redriven: 1, failed: 0 });
        await waitUntil(async () => (await row(job.id)).state === 'done', 10_000);
        expect(runs).toBe(1);
        expect(await row(job.id)).toMatchObject({ state: 'done', redriven: 1 });
      } finally {
        release();
      }
    });

    it('re-drives a run whose lease ran out, spends the attempt, and gives up when the budget is spent', async () => {
      const events: string[] = [];
      const jobs = system([
        defineJob({
          name: 'leased',
          payload: z.object({}),
          attempts: 2,
          handler: async (_p, context) => void events.push(`run ${context.attempt}`),
          onRetry: async (_tx, _p, failure) => void events.push(`retry ${failure.reason}`),
          onGiveUp: async (_tx, _p, failure) => void events.push(`give up ${failure.reason}`),
        }),
      ]);
      const crashed = await db().transaction((tx) => jobs.record(tx, 'leased', {}));
      const spent = await db().transaction((tx) => jobs.record(tx, 'leased', {}));
      // Both were claimed by a worker that died mid-run; `spent` was on its last attempt.
      await repo.claimJob(db(), crashed.id, crashed.deliveryId, 'gone-worker', 30);
      await repo.claimJob(db(), spent.id, spent.deliveryId, 'gone-worker', 30);
      await db().update(backgroundJobs).set({ attempts: 2 }).where(eq(backgroundJobs.id, spent.id));
      expect((await jobs.reconcile())!.redriven).toBe(0);
      await db().update(backgroundJobs).set({ leaseUntil: sql`now() - interval '1 second'` });
      await jobs.startWorker();
      await jobs.drain(10_000);
      expect(events.sort()).toEqual(['give up lease_expired', 'retry lease_expired', 'run 2']);
      expect(await row(crashed.id)).toMatchObject({ state: 'done', attempts: 2, redriven: 1 });
      expect(await row(spent.id)).toMatchObject({ state: 'failed', attempts: 2, lastError: 'lease_expired' });
    });

    it('a run longer than its lease keeps it by renewing, and is not re-driven', async () => {
      let runs = 0;
      const jobs = system(
        [
          defineJob({
            name: 'long',
            payload: z.object({}),
            async handler() {
              runs += 1;
              await sleep(2500);
            },
          }),
        ],
        { settings: { leaseSeconds: 1 } },
      );
      await jobs.startWorker();
      const job = await jobs.enqueue('long', {});
      await waitUntil(async () => (await row(job.id)).state === 'running');
      for (let i = 0; i < 4; i += 1) {
        await sleep(500);
        expect((await jobs.reconcile())!.redriven).toBe(0);
      }
      await jobs.drain(10_000);
      expect(runs).toBe(1);
      expect(await row(job.id)).toMatchObject({ state: 'done', redriven: 0 });
    });

    it('a run that lost its lease to a re-drive is told through its signal', async () => {
      let aborted = false;
      const jobs = system(
        [
          defineJob({
            name: 'usurped',
            payload: z.object({}),
            async handler(_p, context) {
              if (context.attempt > 1) return;
              await waitUntil(() => context.signal.aborted, 5000).catch(() => undefined);
              aborted = context.signal.aborted;
            },
          }),
        ],
        { settings: { leaseSeconds: 1 } },
      );
      await jobs.startWorker();
      const job = await jobs.enqueue('usurped', {});
      await waitUntil(async () => (await row(job.id)).state === 'running');
      // Another reconciler re-drove it (as if this run had hung past its lease).
      await repo.requeueJob(db(), job.id, { deliveryId: job.deliveryId, state: 'running' }, { deliveryId: randomUUID(), delayMs: 60_000, redrive: true });
      await waitUntil(() => aborted, 5000);
      expect(captured.lines().some((l) => /lost its lease/.test(l.msg ?? ''))).toBe(true);
    });

    it('a run that never ends is let go after the job\'s timeout: retried, then given up', async () => {
      const failures: unknown[] = [];
      let runs = 0;
      const jobs = system([
        defineJob({
          name: 'stuck',
          payload: z.object({}),
          attempts: 2,
          backoffMs: 10,
          timeoutMs: 200,
          async handler(_p, context) {
            runs += 1;
            // Never settles, whatever the signal says (a call without a timeout of its own).
            await new Promise(() => undefined);
            void context;
          },
          onGiveUp: async (_tx, _p, failure) => void failures.push(failure.error),
        }),
      ]);
      await jobs.startWorker();
      const job = await jobs.enqueue('stuck', {});
      await jobs.drain(10_000);
      expect(runs).toBe(2);
      expect(failures).toHaveLength(1);
      expect(failures[0]).toBeInstanceOf(JobTimeoutError);
      expect(await row(job.id)).toMatchObject({ state: 'failed', attempts: 2, lastError: 'The job run took longer than 200 ms' });
    });

    it('at start-up, ends at once the runs of dead workers of this host', async () => {
      let runs = 0;
      const jobs = system([defineJob({ name: 'orphan', payload: z.object({}), handler: async () => void (runs += 1) })]);
      const job = await db().transaction((tx) => jobs.record(tx, 'orphan', {}));
      const dead = { id: `${hostname()}:dead`, hostname: hostname(), pid: deadPid(), concurrency: 1 };
      await repo.beat(db(), dead);
      await repo.claimJob(db(), job.id, job.deliveryId, dead.id, 3600);
      await jobs.startWorker();
      await jobs.drain(10_000);
      expect(runs).toBe(1);
      expect(await row(job.id)).toMatchObject({ state: 'done', attempts: 2, redriven: 1 });
      const beats = await db().select().from(workerHeartbeats);
      expect(beats.map((b) => b.id)).toEqual([jobs.workerId]);
    });

    it('a process without a worker warns at start-up when no worker is alive, and not when one is', async () => {
      const jobs = system([defineJob({ name: 'watched', payload: z.object({}), handler: async () => {} })]);
      await jobs.watchWorkers();
      const warned = () => captured.lines().filter((l) => l.level === 40 && /no live worker is registered/.test(l.msg ?? ''));
      expect(warned()).toHaveLength(1);
      const peer = system([defineJob({ name: 'watched', payload: z.object({}), handler: async () => {} })]);
      await peer.startWorker();
      const quiet = system([defineJob({ name: 'watched', payload: z.object({}), handler: async () => {} })]);
      await quiet.watchWorkers();
      expect(warned()).toHaveLength(1);
    });

    it('reports counts, the oldest wait and live workers as metrics, and fails the workers check when jobs wait with none alive', async () => {
      const registry = new Registry();
      const jobs = system([defineJob({ name: 'metered', payload: z.object({}), handler: async () => {} })], {
        registry,
        settings: { waitAlertSeconds: 5 },
      });
      const waiting = await jobs.enqueue('metered', {});
      await jobs.enqueue('metered', {}, { delayMs: 60_000 });
      await db().update(backgroundJobs).set({ runAfter: sql`now() - interval '10 seconds'` }).where(eq(backgroundJobs.id, waiting.id));
      await expect(jobs.checkWorkers()).rejects.toThrow(/no worker is alive/);
      let text = await registry.metrics();
      expect(text).toContain('queue_jobs{queue="metered",state="waiting"} 1');
      expect(text).toContain('queue_jobs{queue="metered",state="delayed"} 1');
      expect(text).toMatch(/queue_oldest_waiting_seconds\{queue="metered"\} (9|1\d)\./);
      expect(text).toContain('queue_workers_live 0');
      await jobs.startWorker();
      await waitUntil(async () => (await row(waiting.id)).state === 'done');
      await expect(jobs.checkWorkers()).resolves.toBeUndefined();
      await sleep(600); // past the one-scrape cache
      text = await registry.metrics();
      expect(text).toContain('queue_jobs{queue="metered",state="waiting"} 0');
      expect(text).toContain('queue_workers_live 1');
      expect(text).toContain('queue_jobs_completed_total{queue="metered"} 1');
      expect(text).toMatch(/queue_job_duration_seconds_count\{queue="metered",outcome="completed"\} 1/);
    });
  });
});
