-- Generations made so far have halfvec indexes (embeddings.repo.ts ensureHnswIndex); new ones on the
-- embedded profile get full-precision vector indexes (embeddings.table.ts indexStorage).
ALTER TABLE "embedding_generations" ADD COLUMN "index_storage" text DEFAULT 'halfvec' NOT NULL;