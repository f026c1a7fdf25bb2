/**
 * Public API of the embeddings module: chunk vectors by generation (one per embedding model), the
 * metered embedding call, the query vector of a search, and the backfill that re-embeds every
 * chunk in the background when EMBEDDING_MODEL changes (search keeps the previous vectors until
 * it is done).
 */
export { createEmbeddingsService, EmbeddingError, type EmbeddingsService } from './embeddings.service.js';
export { embeddingsBackfillJob } from './embeddings.jobs.js';
export { type Generation, indexedVectorType } from './embeddings.repo.js';
