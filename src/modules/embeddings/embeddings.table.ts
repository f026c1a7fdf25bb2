import { sql } from 'drizzle-orm';
import { check, customType, index, integer, pgTable, primaryKey, serial, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { documentChunks, documents } from '../documents/documents.table.js';

const ts = (name: string) => timestamp(name, { withTimezone: true });

export const generationStates = ['active', 'building', 'retired'] as const;
export type GenerationState = (typeof generationStates)[number];
export const vectorIndexStorages = ['halfvec', 'vector'] as const;
export type VectorIndexStorage = (typeof vectorIndexStorages)[number];

/**
 * One embedding model's vectors of every chunk: a generation. At most one is `active` (searched);
 * at most one is `building` (being filled in the background after EMBEDDING_MODEL changed); it
 * becomes active when every chunk has its vector, and the one it replaces is `retired` (its vectors
 * deleted). Each generation has its own HNSW index, partial on its id (embeddings.repo.ts).
 */
export const embeddingGenerations = pgTable(
  'embedding_generations',
  {
    id: serial('id').primaryKey(),
    /** The EMBEDDING_MODEL value (`provider:model`); null for vectors made before models were recorded. */
    model: text('model'),
    dimensions: integer('dimensions').notNull(),
    state: text('state', { enum: generationStates }).notNull(),
    /**
     * What the generation's HNSW index stores: `halfvec` (half the memory of `vector` at the same
     * recall; PostgreSQL) or `vector` (the embedded profile, where PGlite's WebAssembly converts
     * half floats in software: its halfvec index builds 6× and searches 2.7× slower; up to 2,000
     * dimensions). Fixed when the generation is created, so search and index always agree.
     */
    indexStorage: text('index_storage', { enum: vectorIndexStorages }).notNull().default('halfvec'),
    createdAt: ts('created_at').notNull().defaultNow(),
    activatedAt: ts('activated_at'),
    retiredAt: ts('retired_at'),
  },
  (t) => [
    check('embedding_generations_dimensions_check', sql`${t.dimensions} BETWEEN 1 AND 4000`),
    // One active and one building generation at a time, whatever process changes them.
    index('embedding_generations_state_idx').on(t.state),
  ],
);

/** pgvector's `vector` without a fixed size: each generation's size is its model's (the index casts). */
const anyVector = customType<{ data: number[]; driverData: string }>({
  dataType: () => 'vector',
  toDriver: (value) => `[${value.join(',')}]`,
  fromDriver: (value) => JSON.parse(value) as number[],
});

/** A chunk's vector in one generation (the model that made it is the generation's). */
export const chunkEmbeddings = pgTable(
  'chunk_embeddings',
  {
    chunkId: uuid('chunk_id')
      .notNull()
      .references(() => documentChunks.id, { onDelete: 'cascade' }),
    generation: integer('generation')
      .notNull()
      .references(() => embeddingGenerations.id, { onDelete: 'cascade' }),
    /** The chunk's document, so a search scoped to documents reads no chunk rows to filter. */
    documentId: uuid('document_id')
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    embedding: anyVector('embedding').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.chunkId, t.generation] }),
    index('chunk_embeddings_document_idx').on(t.documentId, t.generation),
    index('chunk_embeddings_generation_idx').on(t.generation),
  ],
);
