import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Db, DbOrTx } from '../../db/client.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { faultLogFields, isDependencyUnavailable } from '../faults.js';
import { SpanKind } from '@opentelemetry/api';
import { currentRequestId, runWithRequestContext } from '../request-context.js';
import { contextFromTraceparent, currentTraceparent, withSpan } from '../tracing.js';
import {
  type AnyJobDefinition,
  backoffDelay,
  errorMessage,
  type JobRecorder,
  preparePayload,
  type ResolvedDefinition,
  JobTimeoutError,
  resolveDefinition,
  UnrecoverableJobError,
} from './jobs.js';
import * as repo from './jobs.repo.js';
import type { Delivery, JobFailure, JobQueue, RecordedJob, RecordOptions } from './port.js';
import { createQueueMetrics, type RedriveReason } from './queue-metrics.js';

export interface JobSystemSettings {
  /** JOB_LEASE_SECONDS: a run renews its lease every third of this. */
  leaseSeconds: number;
  /** JOB_RECONCILE_INTERVAL_SECONDS */
  reconcileIntervalSeconds: number;
  /** JOB_DELIVERY_GRACE_SECONDS */
  deliveryGraceSeconds: number;
  /** JOB_WAIT_ALERT_SECONDS */
  waitAlertSeconds: number;
  /** JOB_RETENTION_DAYS */
  retentionDays: number;
  /** WORKER_CONCURRENCY, recorded with the heartbeat. */
  concurrency: number;
}

export interface JobSystemOptions {
  db: Db;
  queue: JobQueue;
  log: Logger;
  registry: Registry;
  settings: JobSystemSettings;
  /** Housekeeping the reconciler runs now and then (expired idempotency keys, ...). */
  maintenance?: Array<{ name: string; run: () => Promise<unknown> }>;
}

/** What one reconciler pass changed; only real changes are counted. */
export interface ReconcileReport {
  /** Jobs whose delivery had not reached the queue and now has. */
  delivered: number;
  /** Jobs delivered again under a fresh delivery id (lost delivery or expired lease). */
  redriven: number;
  /** Jobs given up because their retry budget was spent. */
  failed: number;
}

const BATCH = 500;
/** A job recorded this recently is still being dispatched by its request: the reconciler leaves it alone. */
const OUTBOX_GRACE_SECONDS = 2;
/** Housekeeping runs at most this often. */
const MAINTENANCE_EVERY_MS = 5 * 60_000;
/** A worker whose heartbeat is older than this is not counted as live. */
export const WORKER_STALE_SECONDS = 30;

/**
 * Background jobs with the database as the source of truth (DESIGN section 5, "Faults"):
 * - `record` writes the job in the caller's transaction (the outbox) and `dispatch` hands it to
 *   the queue after commit; a failed dispatch only delays it (the reconciler delivers it).
 * - A delivery runs only if it is the job's current one and the job is queued (`claim`); the run
 *   holds a lease it renews, and its outcome (done, retry with backoff, failed) is written with
 *   the same fence, so a stale or duplicate delivery changes nothing.
 * - The reconciler (every JOB_RECONCILE_INTERVAL_SECONDS in each worker process) re-drives jobs
 *   whose lease ran out or whose delivery is missing from the queue, under a fresh delivery id,
 *   and gives up, through the job's `onGiveUp`, those whose retry budget is spent.
 */
export function createJobSystem<const Defs extends readonly AnyJobDefinition[]>(definitions: Defs, options: JobSystemOptions) {
  const { db, queue, log, settings } = options;
  const byName = new Map<string, ResolvedDefinition>();
  for (const definition of definitions) {
    if (byName.has(definition.name)) throw new Error(`Job ${definition.name} is declared twice`);
    byName.set(definition.name, resolveDefinition(definition));
  }
  const definition = (name: string) => {
    const found = byName.get(name);
    if (!found) throw new Error(`Unknown job "${name}": declare it in the job list`);
    return found;
  };
  const metrics = createQueueMetrics({
    registry: options.registry,
    jobNames: [...byName.keys()],
    log,
    counts: () => repo.jobCounts(db),
    liveWorkers: () => repo.liveWorkerCount(db, WORKER_STALE_SECONDS),
  });
  const worker = {
    id: `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    hostname: hostname(),
    pid: process.pid,
    concurrency: settings.concurrency,
  };
  const timers: NodeJS.Timeout[] = [];
  let started = false;
  let closed = false;
  let lastMaintenance = 0;

  // --- recording and delivering ------------------------------------------------------------

  async function record(tx: DbOrTx, name: string, payload: unknown, recordOptions: RecordOptions = {}): Promise<RecordedJob> {
    const resolved = definition(name);
    const data = preparePayload(resolved, payload);
    const id = recordOptions.id ?? randomUUID();
    const delayMs = Math.max(0, Math.round(recordOptions.delayMs ?? 0));
    const deliveryId = randomUUID();
    const inserted = await repo.insertJob(tx, {
      id,
      name,
      payload: data,
      maxAttempts: resolved.attempts,
      deliveryId,
      delayMs,
      requestId: currentRequestId() ?? null,
      // The recording request's span: the job's run joins its trace, in whichever process runs it.
      traceParent: currentTraceparent() ?? null,
    });
    if (inserted) return { id, name, deliveryId, delayMs };
    // Recorded before (the same id): dispatching it again is harmless.
    const existing = await repo.findJob(tx, id);
    if (!existing || existing.name !== name) throw new Error(`Job id ${id} is taken by another job`);
    return { id, name, deliveryId: existing.deliveryId, delayMs: await repo.delayOf(tx, id) };
  }

  const deliver = (job: RecordedJob) =>
    queue.deliver({ name: job.name, jobId: job.id, deliveryId: job.deliveryId }, { delayMs: job.delayMs });

  const dispatching = new Set<Promise<void>>();

  function dispatch(jobs: readonly RecordedJob[]): Promise<void> {
    const run = (async () => {
      for (const job of jobs) {
        try {
          await deliver(job);
        } catch (error) {
          // The job is recorded; the reconciler delivers it once the queue answers again.
          log.warn({ ...faultLogFields(error), job: job.name, jobId: job.id }, 'job recorded but not delivered yet; the reconciler will deliver it');
          await repo.markUndelivered(db, job.id, job.deliveryId).catch((markError: unknown) => {
            // Then the reconciler finds the delivery missing from the queue, after the grace period.
            log.warn({ ...faultLogFields(markError), jobId: job.id }, 'could not mark a job undelivered');
          });
        }
      }
    })();
    dispatching.add(run);
    void run.finally(() => dispatching.delete(run));
    return run;
  }

  // --- running a delivery ------------------------------------------------------------------

  async function giveUp(row: repo.JobRow, from: { deliveryId: string; state: 'queued' | 'running' }, failure: JobFailure): Promise<boolean> {
    const resolved = byName.get(row.name);
    const message = failure.reason === 'failed' ? errorMessage(failure.error) : failure.reason;
    return db.transaction(async (tx) => {
      const failed = await repo.failJob(tx, row.id, from, message.slice(0, 2000));
      if (!failed) return false;
      const parsed = resolved?.payload.safeParse(row.payload);
      if (resolved?.onGiveUp && parsed?.success) await resolved.onGiveUp(tx, parsed.data, failure);
      return true;
    });
  }

  async function requeue(
    row: repo.JobRow,
    from: { deliveryId: string; state: 'queued' | 'running' },
    to: { delayMs: number; redrive: boolean; failure?: JobFailure },
  ): Promise<RecordedJob | undefined> {
    const resolved = byName.get(row.name);
    const deliveryId = randomUUID();
    const lastError = to.failure ? (to.failure.reason === 'failed' ? errorMessage(to.failure.error) : to.failure.reason) : undefined;
    const updated = await db.transaction(async (tx) => {
      const next = await repo.requeueJob(tx, row.id, from, { deliveryId, delayMs: to.delayMs, lastError: lastError?.slice(0, 2000), redrive: to.redrive });
      if (!next) return undefined;
      const parsed = resolved?.payload.safeParse(row.payload);
      if (to.failure && resolved?.onRetry && parsed?.success) await resolved.onRetry(tx, parsed.data, to.failure);
      return next;
    });
    return updated ? { id: row.id, name: row.name, deliveryId, delayMs: to.delayMs } : undefined;
  }

  /** Renews the run's lease every third of it; aborts the run when another worker has taken the job over. */
  function keepLease(id: string, deliveryId: string, controller: AbortController): () => void {
    const timer = setInterval(() => {
      repo.renewLease(db, id, deliveryId, settings.leaseSeconds).then(
        (owned) => {
          if (!owned && !controller.signal.aborted) {
            log.warn({ jobId: id }, 'job run lost its lease (the job was re-driven); stopping it');
            controller.abort(new Error('lease lost'));
          }
        },
        (error: unknown) => log.warn({ ...faultLogFields(error), jobId: id }, 'could not renew a job lease'),
      );
    }, (settings.leaseSeconds * 1000) / 3);
    timer.unref();
    return () => clearInterval(timer);
  }

  async function runDelivery(delivery: Delivery): Promise<void> {
    const resolved = definition(delivery.name);
    const row = await repo.claimJob(db, delivery.jobId, delivery.deliveryId, worker.id, settings.leaseSeconds);
    if (!row) {
      log.debug({ job: delivery.name, jobId: delivery.jobId, deliveryId: delivery.deliveryId }, 'stale or duplicate delivery ignored');
      return;
    }
    const fields = { job: row.name, jobId: row.id, requestId: row.requestId ?? undefined, attempt: row.attempts, attempts: row.maxAttempts };
    const parsed = resolved.payload.safeParse(row.payload);
    if (!parsed.success) {
      await giveUp(row, { deliveryId: row.deliveryId, state: 'running' }, { reason: 'invalid' });
      metrics.failed.inc({ queue: row.name });
      log.error({ ...fields, issues: parsed.error.issues }, 'job failed for good: its payload no longer validates');
      return;
    }
    log.debug(fields, 'job started');
    const controller = new AbortController();
    const stopLease = keepLease(row.id, row.deliveryId, controller);
    const timer = setTimeout(() => controller.abort(new JobTimeoutError(resolved.timeoutMs)), resolved.timeoutMs);
    const stop = () => {
      stopLease();
      clearTimeout(timer);
    };
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const context = { jobId: row.id, attempt: row.attempts, isFinalAttempt: row.attempts >= row.maxAttempts, signal: controller.signal };
    try {
      const run = runWithRequestContext({ requestId: row.requestId ?? `job-${row.id}` }, () =>
        withSpan(
          `job ${row.name}`,
          {
            kind: SpanKind.CONSUMER,
            parent: contextFromTraceparent(row.traceParent ?? undefined),
            attributes: { 'job.name': row.name, 'job.id': row.id, 'job.attempt': row.attempts },
          },
          () => resolved.handler(parsed.data, context),
        ),
      );
      // A run that times out or loses its lease is let go at once, whether or not the handler
      // notices its signal (its late writes are fenced by the delivery id and the domain's own checks).
      await Promise.race([run, rejectWhenAborted(controller.signal)]);
    } catch (error) {
      stop();
      const failure: JobFailure = { reason: 'failed', error };
      const from = { deliveryId: row.deliveryId, state: 'running' as const };
      if (error instanceof UnrecoverableJobError || context.isFinalAttempt) {
        if (await giveUp(row, from, failure)) {
          metrics.failed.inc({ queue: row.name });
          metrics.duration.observe({ queue: row.name, outcome: 'failed' }, seconds());
          log.error({ ...fields, err: error, durationMs: Math.round(seconds() * 1000) }, `job failed for good: ${errorMessage(error)}`);
        }
        return;
      }
      const delayMs = backoffDelay(resolved.backoffMs, row.attempts);
      const next = await requeue(row, from, { delayMs, redrive: false, failure });
      if (next) {
        metrics.retried.inc({ queue: row.name });
        metrics.duration.observe({ queue: row.name, outcome: 'retry' }, seconds());
        log.warn({ ...fields, err: error, retryInMs: delayMs }, `job failed, will retry: ${errorMessage(error)}`);
        await dispatch([next]);
      }
      return;
    }
    stop();
    if (await repo.completeJob(db, row.id, row.deliveryId)) {
      metrics.completed.inc({ queue: row.name });
      metrics.duration.observe({ queue: row.name, outcome: 'completed' }, seconds());
      log.info({ ...fields, durationMs: Math.round(seconds() * 1000) }, 'job completed');
    } else {
      // Another worker re-drove it meanwhile; the handler's own idempotency keeps the effects single.
      log.warn(fields, 'job finished after losing its lease; its outcome was left to the newer run');
    }
  }

  // --- the reconciler ----------------------------------------------------------------------

  async function reconcile(): Promise<ReconcileReport> {
    const report: ReconcileReport = { delivered: 0, redriven: 0, failed: 0 };
    const redriven = (row: repo.JobRow, reason: RedriveReason) => {
      report.redriven += 1;
      metrics.redriven.inc({ queue: row.name, reason });
    };

    // 1. Runs whose lease ran out: their worker died or hung. The attempt is spent.
    for (const row of await repo.expiredRuns(db, BATCH)) {
      const from = { deliveryId: row.deliveryId, state: 'running' as const };
      const failure: JobFailure = { reason: 'lease_expired' };
      if (row.attempts >= row.maxAttempts) {
        if (await giveUp(row, from, failure)) {
          report.failed += 1;
          metrics.failed.inc({ queue: row.name });
          log.error({ job: row.name, jobId: row.id, requestId: row.requestId, attempts: row.attempts }, 'job failed for good: its last run died');
        }
        continue;
      }
      const next = await requeue(row, from, { delayMs: 0, redrive: true, failure });
      if (next) {
        redriven(row, 'lease_expired');
        await dispatch([next]);
      }
    }

    // 2. Recorded but never handed to the queue (the dispatch after commit failed).
    for (const row of await repo.undeliveredJobs(db, OUTBOX_GRACE_SECONDS, BATCH)) {
      try {
        await deliver({ id: row.id, name: row.name, deliveryId: row.deliveryId, delayMs: await repo.delayOf(db, row.id) });
        await repo.markDelivered(db, row.id, row.deliveryId);
        report.delivered += 1;
        metrics.redriven.inc({ queue: row.name, reason: 'undelivered' });
      } catch (error) {
        log.warn(faultLogFields(error), 'the job queue does not answer; undelivered jobs wait for the next pass');
        break;
      }
    }

    // 3. Delivered, due, and not started after the grace period: is the delivery still on the queue?
    const alive: string[] = [];
    for (const row of await repo.unconfirmedDeliveries(db, settings.deliveryGraceSeconds, BATCH)) {
      let state;
      try {
        state = await queue.state(row.deliveryId);
      } catch (error) {
        log.warn(faultLogFields(error), 'the job queue does not answer; delivery checks wait for the next pass');
        break;
      }
      if (state === 'waiting' || state === 'delayed' || state === 'active') {
        alive.push(row.id);
        continue;
      }
      const next = await requeue(row, { deliveryId: row.deliveryId, state: 'queued' }, { delayMs: 0, redrive: true });
      if (next) {
        redriven(row, 'delivery_lost');
        await dispatch([next]);
      }
    }
    await repo.markChecked(db, alive);

    if (Date.now() - lastMaintenance > MAINTENANCE_EVERY_MS) {
      lastMaintenance = Date.now();
      await maintain();
    }
    return report;
  }

  async function maintain(): Promise<void> {
    const tasks = [
      { name: 'finished jobs', run: () => repo.deleteFinishedJobs(db, settings.retentionDays) },
      { name: 'stale worker heartbeats', run: () => repo.deleteStaleHeartbeats(db) },
      ...(options.maintenance ?? []),
    ];
    for (const task of tasks) {
      await task.run().catch((error: unknown) => log.warn({ ...faultLogFields(error), task: task.name }, 'housekeeping failed'));
    }
  }

  async function reconcileAndLog(): Promise<ReconcileReport | undefined> {
    try {
      const report = await reconcile();
      if (report.delivered || report.redriven || report.failed) log.info(report, 'reconciler moved stranded jobs');
      return report;
    } catch (error) {
      log.warn(faultLogFields(error), 'reconciler pass failed; it runs again at the next interval');
      return undefined;
    }
  }

  /**
   * Heartbeats of this host whose process is gone (a restart after kill -9, a crash): their runs
   * cannot be alive, so their leases end now instead of when they run out.
   */
  async function reapDeadWorkersOfThisHost(): Promise<void> {
    const dead = (await repo.heartbeatsOf(db, worker.hostname))
      .filter((beat) => beat.id !== worker.id && (beat.pid === worker.pid || !processExists(beat.pid)))
      .map((beat) => beat.id);
    if (dead.length === 0) return;
    const expired = await repo.expireLeasesOf(db, dead);
    await repo.removeHeartbeats(db, dead);
    log.info({ workers: dead.length, runs: expired }, 'cleared the heartbeats and runs of dead workers of this host');
  }

  async function heartbeat(): Promise<void> {
    await repo.beat(db, worker).catch((error: unknown) => log.warn(faultLogFields(error), 'worker heartbeat failed'));
  }

  function every(seconds: number, fn: () => Promise<unknown>) {
    let busy = false;
    const timer = setInterval(() => {
      if (busy || closed) return;
      busy = true;
      void fn().finally(() => (busy = false));
    }, seconds * 1000);
    timer.unref();
    timers.push(timer);
  }

  const recorder: JobRecorder<Defs> = {
    record: (tx, name, payload, recordOptions) => record(tx, name, payload, recordOptions),
    dispatch,
    async enqueue(name, payload, recordOptions) {
      const job = await record(db, name, payload, recordOptions);
      await dispatch([job]);
      return job;
    },
  };

  return {
    ...recorder,
    queue,
    workerId: worker.id,
    reconcile: reconcileAndLog,

    /** Runs jobs in this process: the queue's worker, the heartbeat and the periodic reconciler. */
    async startWorker(): Promise<void> {
      if (closed) throw new Error('The job system is closed');
      if (started) return;
      started = true;
      await queue.startWorker(runDelivery);
      await heartbeat();
      await reapDeadWorkersOfThisHost().catch((error: unknown) => log.warn(faultLogFields(error), 'could not check for dead workers'));
      every(Math.min(10, settings.leaseSeconds / 3), heartbeat);
      every(settings.reconcileIntervalSeconds, reconcileAndLog);
      // At once too: what a previous process left (lost in-process deliveries, dead runs) moves now.
      await reconcileAndLog();
    },

    /**
     * For a process that runs no worker (the distributed API): warns now when no worker is alive,
     * and again every minute while jobs wait longer than JOB_WAIT_ALERT_SECONDS with none alive.
     */
    async watchWorkers(): Promise<void> {
      const live = await repo.liveWorkerCount(db, WORKER_STALE_SECONDS).catch(() => undefined);
      if (live === 0) {
        log.warn('this process runs no job worker and no live worker is registered: background jobs wait until `npm run worker` runs');
      }
      every(60, async () => {
        try {
          await this.checkWorkers();
        } catch (error) {
          if (isDependencyUnavailable(error)) log.warn(faultLogFields(error), 'could not check for live workers');
          else log.warn(errorMessage(error));
        }
      });
    },

    /** Failed or stuck jobs for operators (admin CLI `tasks list`). */
    listJobs: (filter: { which: 'stuck' | 'failed' | 'all'; olderThanMinutes?: number; name?: string; limit?: number }) =>
      repo.listJobsFor(db, {
        which: filter.which,
        olderThanMinutes: filter.olderThanMinutes ?? 15,
        name: filter.name,
        limit: Math.min(Math.max(filter.limit ?? 50, 1), 1000),
      }),

    /**
     * An operator delivers a job again under a fresh delivery id (admin CLI `tasks redrive`): a
     * queued one whose delivery is lost, a running one whose run is dead (`force` while its lease
     * still runs: the current run is fenced out), or a failed one, which gets a fresh retry budget
     * and its domain status reopened (`onRedrive`). A finished job is refused.
     */
    async redrive(id: string, redriveOptions: { force?: boolean; deliverNow?: boolean } = {}): Promise<{ id: string; name: string; previousState: string; deliveryId: string }> {
      const row = await repo.findJob(db, id);
      if (!row) throw new NotFoundError(`No background job with id ${id}.`, 'job_not_found');
      if (row.state === 'done') throw new ConflictError('The job has finished; there is nothing to re-drive.', 'job_finished');
      if (row.state === 'running' && row.leaseUntil && row.leaseUntil > new Date() && !redriveOptions.force) {
        throw new ConflictError('The job is running under a live lease; pass force to re-drive it anyway.', 'job_running');
      }
      const resolved = byName.get(row.name);
      const deliveryId = randomUUID();
      const requeued = await db.transaction(async (tx) => {
        const next = await repo.requeueJob(tx, row.id, { deliveryId: row.deliveryId, state: row.state }, {
          deliveryId,
          delayMs: 0,
          redrive: true,
          resetAttempts: row.state === 'failed',
        });
        if (!next) return undefined;
        const parsed = resolved?.payload.safeParse(row.payload);
        if (row.state === 'failed' && resolved?.onRedrive && parsed?.success) await resolved.onRedrive(tx, parsed.data);
        return next;
      });
      if (!requeued) throw new ConflictError('The job changed meanwhile; look again and retry.', 'job_changed');
      metrics.redriven.inc({ queue: row.name, reason: 'operator' });
      log.info({ job: row.name, jobId: row.id, previousState: row.state }, 're-driven by an operator');
      // A process whose queue no worker reads (the admin CLI on the in-process queue) leaves the
      // outbox mark instead: the reconciler of the process that runs jobs delivers it.
      if (redriveOptions.deliverNow ?? true) await dispatch([{ id: row.id, name: row.name, deliveryId, delayMs: 0 }]);
      else await repo.markUndelivered(db, row.id, deliveryId);
      return { id: row.id, name: row.name, previousState: row.state, deliveryId };
    },

    /** Number of worker processes with a recent heartbeat. */
    liveWorkers: () => repo.liveWorkerCount(db, WORKER_STALE_SECONDS),

    /** The `/readyz` check of a process without a worker: fails when jobs wait with no live worker. */
    async checkWorkers(): Promise<void> {
      const counts = await repo.jobCounts(db);
      const oldest = Math.max(0, ...counts.map((c) => c.oldestWaitingSeconds ?? 0));
      if (oldest < settings.waitAlertSeconds) return;
      if ((await repo.liveWorkerCount(db, WORKER_STALE_SECONDS)) > 0) return;
      throw new Error(`jobs have waited ${Math.round(oldest)} s and no worker is alive: start one with npm run worker`);
    },

    /** Resolves when no job is queued or running (tests, benchmarks). */
    async drain(timeoutMs = 60_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while ((await repo.countUnfinished(db)) > 0) {
        if (Date.now() > deadline) throw new Error(`Jobs did not finish within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },

    /**
     * Stops the timers and (unless told otherwise: a queue a test brought) the queue, letting
     * running jobs finish, then removes this worker's heartbeat.
     */
    async close(closeOptions: { closeQueue?: boolean } = {}): Promise<void> {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearInterval(timer);
      // Deliveries under way finish (each is bounded); what they miss, the reconciler delivers.
      await Promise.all([...dispatching]);
      if (closeOptions.closeQueue ?? true) await queue.close();
      if (started) await repo.removeHeartbeats(db, [worker.id]).catch(() => undefined);
    },
  };
}

export type JobSystem<Defs extends readonly AnyJobDefinition[]> = ReturnType<typeof createJobSystem<Defs>>;

/** Rejects with the signal's reason once it aborts (never settles otherwise). */
function rejectWhenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
