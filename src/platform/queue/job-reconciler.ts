import type { Logger } from 'pino';
import type { Db } from '../../db/client.js';
import { faultLogFields } from '../faults.js';
import type { JobOutcomes } from './job-outcomes.js';
import * as repo from './jobs.repo.js';
import type { JobFailure, JobQueue, RecordedJob } from './port.js';
import type { QueueMetrics, RedriveReason } from './queue-metrics.js';

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

/**
 * The reconciler (every JOB_RECONCILE_INTERVAL_SECONDS in each worker process) re-drives jobs whose
 * lease ran out or whose delivery is missing from the queue, under a fresh delivery id, gives up,
 * through the job's `onGiveUp`, those whose retry budget is spent, and now and then runs the
 * housekeeping. Returns one logged pass; a failed pass resolves to undefined.
 */
export function createReconciler(options: {
  db: Db;
  queue: JobQueue;
  log: Logger;
  /** JOB_DELIVERY_GRACE_SECONDS */
  deliveryGraceSeconds: number;
  /** JOB_RETENTION_DAYS */
  retentionDays: number;
  metrics: QueueMetrics;
  outcomes: JobOutcomes;
  deliver: (job: RecordedJob) => Promise<void>;
  dispatch: (jobs: readonly RecordedJob[]) => Promise<void>;
  /** Housekeeping besides the queue's own (expired idempotency keys, ...). */
  maintenance?: Array<{ name: string; run: () => Promise<unknown> }>;
}): () => Promise<ReconcileReport | undefined> {
  const { db, queue, log, metrics, deliver, dispatch } = options;
  const { giveUp, requeue } = options.outcomes;
  let lastMaintenance = 0;

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
    for (const row of await repo.unconfirmedDeliveries(db, options.deliveryGraceSeconds, BATCH)) {
      let state;
      try {
        state = await queue.state(row.deliveryId);
      } catch (error) {
        log.warn(faultLogFields(error), 'the job queue does not answer; delivery checks wait for the next pass');
        break;
      }
      // `active` while the job is still unclaimed, seen so on two checks a grace apart: the worker
      // that took the delivery died before claiming it. The queue would hand it out again only
      // after its own stalled-job check (BullMQ: 30 s lock, then up to 30 s more), so re-drive now;
      // if that worker is alive after all, its claim is refused by the new delivery id.
      const unclaimed = state === 'active' && row.checkedAt !== null;
      if ((state === 'waiting' || state === 'delayed' || state === 'active') && !unclaimed) {
        alive.push(row.id);
        continue;
      }
      const next = await requeue(row, { deliveryId: row.deliveryId, state: 'queued' }, { delayMs: 0, redrive: true });
      if (next) {
        redriven(row, unclaimed ? 'unclaimed' : 'delivery_lost');
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
      { name: 'finished jobs', run: () => repo.deleteFinishedJobs(db, options.retentionDays) },
      { name: 'stale worker heartbeats', run: () => repo.deleteStaleHeartbeats(db) },
      ...(options.maintenance ?? []),
    ];
    for (const task of tasks) {
      await task.run().catch((error: unknown) => log.warn({ ...faultLogFields(error), task: task.name }, 'housekeeping failed'));
    }
  }

  return async function reconcileAndLog(): Promise<ReconcileReport | undefined> {
    try {
      const report = await reconcile();
      if (report.delivered || report.redriven || report.failed) log.info(report, 'reconciler moved stranded jobs');
      return report;
    } catch (error) {
      log.warn(faultLogFields(error), 'reconciler pass failed; it runs again at the next interval');
      return undefined;
    }
  };
}
