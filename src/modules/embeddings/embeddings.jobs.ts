import { z } from 'zod';
import { defineJob } from '../../platform/queue/jobs.js';
import type { EmbeddingsService } from './embeddings.service.js';

/**
 * Fills an embedding generation (after EMBEDDING_MODEL changed, or chunks stored without vectors):
 * resumable, since what is done is the data itself; a provider failure retries with backoff.
 */
export function embeddingsBackfillJob(embeddings: () => EmbeddingsService, options: { backoffMs?: number } = {}) {
  return defineJob({
    name: 'embeddings.backfill',
    payload: z.object({ generation: z.number().int().positive() }),
    attempts: 5,
    backoffMs: options.backoffMs ?? 30_000,
    // A run works five minutes, then continues in a new job (embeddings.service.ts).
    timeoutMs: 15 * 60_000,
    handler: ({ generation }, context) => embeddings().backfill(generation, context),
  });
}
