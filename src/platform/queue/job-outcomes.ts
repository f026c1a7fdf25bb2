import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/client.js';
import { errorMessage, type ResolvedDefinition } from './jobs.js';
import * as repo from './jobs.repo.js';
import type { JobFailure, RecordedJob } from './port.js';

/**
 * The two ways a run or the reconciler moves a job on: given up, or queued again under a fresh
 * delivery id. Each is written only if the job is still at `from` (so a stale run changes nothing),
 * with the definition's hook (`onGiveUp`, `onRetry`) in the same transaction.
 */
export function createJobOutcomes(db: Db, byName: ReadonlyMap<string, ResolvedDefinition>) {
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

  return { giveUp, requeue };
}

export type JobOutcomes = ReturnType<typeof createJobOutcomes>;
