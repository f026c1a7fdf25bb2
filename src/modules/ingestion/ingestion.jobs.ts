import { z } from 'zod';
import { defineJob } from '../../platform/queue/jobs.js';
import type { IngestionService } from './ingestion.service.js';

/**
 * Ingests one document version; the job's id is the task's id. A finished or revoked task is
 * skipped, so a job that runs again after a crash changes nothing. Between attempts the task shows
 * RETRY; when the attempts are spent (also when the last run's worker died) it ends FAILURE with a
 * message for the user and the document `failed`, in the same transaction as the job.
 * `backoffMs` (INGESTION_RETRY_BACKOFF_MS) is the first retry's delay; it doubles per attempt.
 */
export function ingestDocumentJob(ingestion: () => IngestionService, options: { backoffMs?: number } = {}) {
  return defineJob({
    name: 'documents.ingest',
    payload: z.object({ taskId: z.uuid() }),
    attempts: 3,
    backoffMs: options.backoffMs ?? 5000,
    // Large PDFs with embeddings take minutes; a run stuck past this is let go and retried.
    timeoutMs: 10 * 60_000,
    handler: ({ taskId }, context) => ingestion().run(taskId, context),
    onRetry: (tx, { taskId }, failure) => ingestion().markRetry(tx, taskId, failure),
    onGiveUp: (tx, { taskId }, failure) => ingestion().markFailed(tx, taskId, failure),
    onRedrive: (tx, { taskId }) => ingestion().reopen(tx, taskId),
  });
}
