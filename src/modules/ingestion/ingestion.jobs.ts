import { z } from 'zod';
import { defineJob } from '../../platform/queue/jobs.js';
import type { IngestionService } from './ingestion.service.js';

/**
 * Ingests one document version; idempotent by task id (a finished task is skipped).
 * `backoffMs` (INGESTION_RETRY_BACKOFF_MS) is the first retry's delay; it doubles per attempt.
 */
export function ingestDocumentJob(ingestion: () => IngestionService, options: { backoffMs?: number } = {}) {
  return defineJob({
    name: 'documents.ingest',
    payload: z.object({ taskId: z.uuid() }),
    attempts: 3,
    backoffMs: options.backoffMs ?? 5000,
    handler: ({ taskId }, context) => ingestion().run(taskId, context),
  });
}
