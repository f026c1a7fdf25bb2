import { SpanKind } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Db } from '../../db/client.js';
import { faultLogFields } from '../faults.js';
import { runWithRequestContext } from '../request-context.js';
import { contextFromTraceparent, withSpan } from '../tracing.js';
import type { JobOutcomes } from './job-outcomes.js';
import { backoffDelay, errorMessage, JobTimeoutError, type ResolvedDefinition, UnrecoverableJobError } from './jobs.js';
import * as repo from './jobs.repo.js';
import type { Delivery, JobFailure, RecordedJob } from './port.js';
import type { QueueMetrics } from './queue-metrics.js';

/**
 * Running a delivery: it runs only if it is the job's current one and the job is queued (`claim`);
 * the run holds a lease it renews, and its outcome (done, retry with backoff, failed) is written
 * with the same fence, so a stale or duplicate delivery changes nothing.
 */
export function createDeliveryRunner(options: {
  db: Db;
  log: Logger;
  /** JOB_LEASE_SECONDS */
  leaseSeconds: number;
  workerId: string;
  definition: (name: string) => ResolvedDefinition;
  metrics: QueueMetrics;
  outcomes: JobOutcomes;
  dispatch: (jobs: readonly RecordedJob[]) => Promise<void>;
}): (delivery: Delivery) => Promise<void> {
  const { db, log, leaseSeconds, workerId, definition, metrics, dispatch } = options;
  const { giveUp, requeue } = options.outcomes;

  /** Renews the run's lease every third of it; aborts the run when another worker has taken the job over. */
  function keepLease(id: string, deliveryId: string, controller: AbortController): () => void {
    const timer = setInterval(() => {
      repo.renewLease(db, id, deliveryId, leaseSeconds).then(
        (owned) => {
          if (!owned && !controller.signal.aborted) {
            log.warn({ jobId: id }, 'job run lost its lease (the job was re-driven); stopping it');
            controller.abort(new Error('lease lost'));
          }
        },
        (error: unknown) => log.warn({ ...faultLogFields(error), jobId: id }, 'could not renew a job lease'),
      );
    }, (leaseSeconds * 1000) / 3);
    timer.unref();
    return () => clearInterval(timer);
  }

  return async function runDelivery(delivery: Delivery): Promise<void> {
    const resolved = definition(delivery.name);
    const row = await repo.claimJob(db, delivery.jobId, delivery.deliveryId, workerId, leaseSeconds);
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
  };
}

/** Rejects with the signal's reason once it aborts (never settles otherwise). */
function rejectWhenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
