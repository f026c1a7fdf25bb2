import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Db } from '../../db/client.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { faultLogFields, isDependencyUnavailable } from '../faults.js';
import { createJobOutbox } from './job-outbox.js';
import { createJobOutcomes } from './job-outcomes.js';
import { createReconciler } from './job-reconciler.js';
import { createDeliveryRunner } from './job-run.js';
import { type AnyJobDefinition, errorMessage, type JobRecorder, type ResolvedDefinition, resolveDefinition } from './jobs.js';
import * as repo from './jobs.repo.js';
import type { JobQueue } from './port.js';
import { createQueueMetrics } from './queue-metrics.js';

export type { ReconcileReport } from './job-reconciler.js';

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

/** A worker whose heartbeat is older than this is not counted as live. */
export const WORKER_STALE_SECONDS = 30;

/**
 * Background jobs with the database as the source of truth (DESIGN section 5, "Faults"), in parts:
 * - job-outbox.ts: `record` writes the job in the caller's transaction, `dispatch` hands it to the
 *   queue after commit; a failed dispatch only delays it (the reconciler delivers it);
 * - job-run.ts: a delivery runs only if it is the job's current one, under a lease it renews, and
 *   its outcome (job-outcomes.ts) is written with the same fence;
 * - job-reconciler.ts: re-drives jobs whose lease ran out or whose delivery is lost, gives up those
 *   whose retry budget is spent, and runs the housekeeping.
 * Here they are put together, with this process's worker (heartbeat, start, close) and the
 * operators' commands.
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

  const outbox = createJobOutbox({ db, queue, log, definition });
  const { record, dispatch } = outbox;
  const outcomes = createJobOutcomes(db, byName);
  const runDelivery = createDeliveryRunner({
    db,
    log,
    leaseSeconds: settings.leaseSeconds,
    workerId: worker.id,
    definition,
    metrics,
    outcomes,
    dispatch,
  });
  const reconcileAndLog = createReconciler({
    db,
    queue,
    log,
    deliveryGraceSeconds: settings.deliveryGraceSeconds,
    retentionDays: settings.retentionDays,
    metrics,
    outcomes,
    deliver: outbox.deliver,
    dispatch,
    maintenance: options.maintenance,
  });

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
      await outbox.settled();
      if (closeOptions.closeQueue ?? true) await queue.close();
      if (started) await repo.removeHeartbeats(db, [worker.id]).catch(() => undefined);
    },
  };
}

export type JobSystem<Defs extends readonly AnyJobDefinition[]> = ReturnType<typeof createJobSystem<Defs>>;

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
