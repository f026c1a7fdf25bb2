import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db, DbOrTx } from '../../db/client.js';
import { faultLogFields } from '../faults.js';
import { currentRequestId } from '../request-context.js';
import { currentTraceparent } from '../tracing.js';
import { preparePayload, type ResolvedDefinition } from './jobs.js';
import * as repo from './jobs.repo.js';
import type { JobQueue, RecordedJob, RecordOptions } from './port.js';

/**
 * Recording and delivering (the outbox): `record` writes the job in the caller's transaction and
 * `dispatch` hands it to the queue after commit; a failed dispatch only delays it (the reconciler
 * delivers it).
 */
export function createJobOutbox(options: { db: Db; queue: JobQueue; log: Logger; definition: (name: string) => ResolvedDefinition }) {
  const { db, queue, log, definition } = options;

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

  return {
    record,
    /** Hands one delivery to the queue; throws when the queue does not answer (no outbox mark). */
    deliver,
    dispatch,
    /** Resolves when the dispatches under way have finished. */
    settled: () => Promise.all([...dispatching]),
  };
}
