import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows, textArrayLiteral as textArray } from '../../db/client.js';
import { embeddingGenerations, type GenerationState, type VectorIndexStorage } from './embeddings.table.js';


export type GenerationRow = typeof embeddingGenerations.$inferSelect;

/** A generation as search and ingestion use it. */
export interface Generation {
  id: number;
  model: string | null;
  dimensions: number;
  indexStorage: VectorIndexStorage;
}

/** pgvector's HNSW index on `vector` takes up to 2,000 dimensions (halfvec: 4,000). */
export const VECTOR_INDEX_MAX_DIMENSIONS = 2000;

/**
 * The expression a generation's HNSW index is built on, `embedding::halfvec(n)` or
 * `embedding::vector(n)` (the column has no size of its own). A search's ORDER BY must say it
 * exactly (and cast the query the same way) for PostgreSQL to use the index. Integers of our own.
 */
export function indexedVectorType(generation: Pick<Generation, 'dimensions' | 'indexStorage'>): string {
  return `${generation.indexStorage === 'vector' ? 'vector' : 'halfvec'}(${Math.trunc(generation.dimensions)})`;
}

/**
 * The name of a generation's HNSW index. Its expression and predicate are what the search's ORDER
 * BY and WHERE say (searchSql in knowledge-bases), so the planner can use it.
 */
export const hnswIndexName = (generation: number) => `chunk_embeddings_hnsw_${generation}`;

/**
 * The generation's HNSW index: cosine over the vector cast to its index storage (halfvec: half the
 * index memory of float vectors at the same recall, bench/RESULTS.md; see `indexStorage`),
 * partial on the generation. Created with the generation, while it is empty, so every vector
 * stored later is indexed as it arrives. Ids and sizes are integers we produced, never input.
 */
export async function ensureHnswIndex(db: DbOrTx, generation: Generation): Promise<void> {
  const id = Math.trunc(generation.id);
  const type = indexedVectorType(generation);
  const opclass = generation.indexStorage === 'vector' ? 'vector_cosine_ops' : 'halfvec_cosine_ops';
  await db.execute(
    sql.raw(`CREATE INDEX IF NOT EXISTS ${hnswIndexName(id)} ON chunk_embeddings USING hnsw ((embedding::${type}) ${opclass}) WHERE generation = ${id}`),
  );
}

export async function dropHnswIndex(db: DbOrTx, generation: number): Promise<void> {
  await db.execute(sql.raw(`DROP INDEX IF EXISTS ${hnswIndexName(Math.trunc(generation))}`));
}

export async function listGenerations(db: DbOrTx): Promise<GenerationRow[]> {
  return db.select().from(embeddingGenerations).orderBy(embeddingGenerations.id);
}

export async function createGeneration(
  db: DbOrTx,
  values: { model: string; dimensions: number; state: GenerationState; indexStorage: VectorIndexStorage },
): Promise<GenerationRow> {
  const [row] = await db
    .insert(embeddingGenerations)
    .values({ ...values, activatedAt: values.state === 'active' ? new Date() : null })
    .returning();
  return row!;
}

/** Vectors made before models were recorded become the configured model's (same size: it made them). */
export async function adoptLegacyGeneration(db: DbOrTx, id: number, model: string): Promise<void> {
  await db.update(embeddingGenerations).set({ model }).where(and(eq(embeddingGenerations.id, id), isNull(embeddingGenerations.model)));
}

/** The building generation becomes the one searched; the one it replaces (if any) is retired. */
export async function activateGeneration(db: DbOrTx, id: number): Promise<void> {
  await db
    .update(embeddingGenerations)
    .set({ state: 'retired', retiredAt: new Date() })
    .where(and(eq(embeddingGenerations.state, 'active'), sql`${embeddingGenerations.id} <> ${id}`));
  await db.update(embeddingGenerations).set({ state: 'active', activatedAt: new Date() }).where(eq(embeddingGenerations.id, id));
}

/** A generation nobody will search (a building one whose model was configured away, say). */
export async function retireGenerations(db: DbOrTx, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.update(embeddingGenerations).set({ state: 'retired', retiredAt: new Date() }).where(inArray(embeddingGenerations.id, ids));
}

/** Deletes up to `limit` vectors of a retired generation; returns how many went. */
export async function deleteGenerationVectors(db: DbOrTx, generation: number, limit: number): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`WITH gone AS (DELETE FROM chunk_embeddings WHERE ctid IN (
          SELECT ctid FROM chunk_embeddings WHERE generation = ${generation} LIMIT ${limit}) RETURNING 1)
        SELECT count(*)::int AS n FROM gone`,
  );
  return rows[0]?.n ?? 0;
}

export async function deleteGeneration(db: DbOrTx, generation: number): Promise<void> {
  await db.delete(embeddingGenerations).where(eq(embeddingGenerations.id, generation));
}

/**
 * Stores vectors of one generation; a chunk deleted meanwhile (its document reprocessed or
 * removed) is skipped, a chunk that has one is overwritten. One statement.
 */
export async function storeVectors(db: DbOrTx, generation: number, rows: Array<{ chunkId: string; vector: number[] }>): Promise<void> {
  for (let i = 0; i < rows.length; i += 200) {
    const batch = rows.slice(i, i + 200);
    await db.execute(sql`
      INSERT INTO chunk_embeddings (chunk_id, generation, document_id, embedding)
      SELECT c.id, ${generation}, c.document_id, v.embedding::vector
      FROM unnest(${textArray(batch.map((r) => r.chunkId))}::uuid[], ${textArray(batch.map((r) => `[${r.vector.join(',')}]`))}::text[]) AS v(chunk_id, embedding)
      JOIN document_chunks c ON c.id = v.chunk_id
      ON CONFLICT (chunk_id, generation) DO UPDATE SET embedding = EXCLUDED.embedding`);
  }
}

export interface ChunkToEmbed {
  id: string;
  workspaceId: string;
  content: string;
}

/**
 * Chunks of ready documents without a vector in `generation`, in id order after `after` (a
 * keyset: each batch reads only its own rows), leaving out the workspaces in `skip`.
 */
export async function chunksLackingVectors(
  db: DbOrTx,
  generation: number,
  options: { after: string | null; limit: number; skip: string[] },
): Promise<ChunkToEmbed[]> {
  return queryRows<ChunkToEmbed>(
    db,
    sql`SELECT c.id, c.workspace_id AS "workspaceId", c.content
        FROM document_chunks c JOIN documents d ON d.id = c.document_id
        WHERE d.processing_status = 'ready'
          AND c.id > ${options.after ?? '00000000-0000-0000-0000-000000000000'}::uuid
          AND NOT (c.workspace_id = ANY(${textArray(options.skip)}::uuid[]))
          AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id AND e.generation = ${generation})
        ORDER BY c.id
        LIMIT ${options.limit}`,
  );
}

/** How many chunks of ready documents still lack a vector in `generation` (progress, tests). */
export async function countLackingVectors(db: DbOrTx, generation: number): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    db,
    sql`SELECT count(*)::int AS n FROM document_chunks c JOIN documents d ON d.id = c.document_id
        WHERE d.processing_status = 'ready'
          AND NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.id AND e.generation = ${generation})`,
  );
  return rows[0]?.n ?? 0;
}
