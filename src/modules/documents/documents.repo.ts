import { and, count, desc, eq, inArray, isNull, or, type SQL, sql, sum } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { documentChunks, documents, ingestionTasks, type TaskStatus } from './documents.table.js';
import { newId } from '../../db/columns.js';
import { searchTextFor } from './search-language.js';

export type DocumentRow = typeof documents.$inferSelect;
export type TaskRow = typeof ingestionTasks.$inferSelect;
export type ChunkRow = typeof documentChunks.$inferSelect;

export interface Viewer {
  userId: number;
  isOwnerOrAdmin: boolean;
  /**
   * SQL condition: the document (joined as `documents`) is attached to a knowledge base the viewer
   * reads. The knowledge-bases module's rule, passed in: that module sits above this one (it owns
   * the attachments and the read rule).
   */
  inReadableKb: SQL;
}

/** SQL condition: the document (joined as `documents`) is visible to the viewer. */
export function visibleDocument(viewer: Viewer) {
  if (viewer.isOwnerOrAdmin) return sql`true`;
  return or(
    eq(documents.uploadedBy, viewer.userId),
    viewer.inReadableKb,
  )!;
}

export async function listVisibleDocuments(db: DbOrTx, workspaceId: string, viewer: Viewer, limit: number, offset: number) {
  const where = and(eq(documents.workspaceId, workspaceId), visibleDocument(viewer));
  const [rows, [total]] = await Promise.all([
    db.select().from(documents).where(where).orderBy(desc(documents.createdAt), desc(documents.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(documents).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

export async function findDocument(db: DbOrTx, workspaceId: string, documentId: string): Promise<DocumentRow | undefined> {
  const [row] = await db
    .select()
    .from(documents)
    .where(and(eq(documents.id, documentId), eq(documents.workspaceId, workspaceId)));
  return row;
}

export async function findDocumentById(db: DbOrTx, documentId: string): Promise<DocumentRow | undefined> {
  const [row] = await db.select().from(documents).where(eq(documents.id, documentId));
  return row;
}

export async function isVisible(db: DbOrTx, documentId: string, viewer: Viewer): Promise<boolean> {
  const [row] = await db.select({ id: documents.id }).from(documents).where(and(eq(documents.id, documentId), visibleDocument(viewer)));
  return Boolean(row);
}

/** The ids among `ids` that are documents of the workspace visible to the viewer. */
export async function visibleDocumentIds(db: DbOrTx, workspaceId: string, ids: string[], viewer: Viewer): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await db
    .select({ id: documents.id })
    .from(documents)
    .where(and(eq(documents.workspaceId, workspaceId), inArray(documents.id, ids), visibleDocument(viewer)));
  return new Set(rows.map((r) => r.id));
}

/** Documents and bytes a workspace holds (pending uploads count: their space is reserved). */
export async function workspaceUsage(db: DbOrTx, workspaceId: string): Promise<{ documents: number; storageBytes: number }> {
  const [row] = await db
    .select({ n: count(), bytes: sum(documents.size) })
    .from(documents)
    .where(eq(documents.workspaceId, workspaceId));
  return { documents: row?.n ?? 0, storageBytes: Number(row?.bytes ?? 0) };
}

export async function insertDocument(db: DbOrTx, values: typeof documents.$inferInsert): Promise<DocumentRow> {
  const [row] = await db.insert(documents).values(values).returning();
  return row!;
}

export async function updateDocument(db: DbOrTx, documentId: string, values: Partial<typeof documents.$inferInsert>) {
  const [row] = await db
    .update(documents)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(documents.id, documentId))
    .returning();
  return row;
}

/** Marks an upload confirmed unless another confirm did first; undefined then. */
export async function claimUpload(db: DbOrTx, documentId: string, values: { size: number; contentType: string }) {
  const [row] = await db
    .update(documents)
    .set({ ...values, storedAt: new Date(), updatedAt: new Date() })
    .where(and(eq(documents.id, documentId), isNull(documents.storedAt)))
    .returning();
  return row;
}

export async function deleteDocument(db: DbOrTx, documentId: string): Promise<void> {
  await db.delete(documents).where(eq(documents.id, documentId));
}

// --- tasks ---------------------------------------------------------------------------------------

export async function insertTask(db: DbOrTx, documentId: string): Promise<TaskRow> {
  const id = newId();
  const [row] = await db.insert(ingestionTasks).values({ id, documentId, taskId: id }).returning();
  return row!;
}

export async function latestTask(db: DbOrTx, documentId: string): Promise<TaskRow | undefined> {
  const [row] = await db
    .select()
    .from(ingestionTasks)
    .where(eq(ingestionTasks.documentId, documentId))
    .orderBy(desc(ingestionTasks.createdAt), desc(ingestionTasks.id))
    .limit(1);
  return row;
}

export async function findTask(db: DbOrTx, taskId: string): Promise<TaskRow | undefined> {
  const [row] = await db.select().from(ingestionTasks).where(eq(ingestionTasks.id, taskId));
  return row;
}

/** The task row, locked until the transaction ends (so a revocation cannot slip in before commit). */
export async function lockTask(db: DbOrTx, taskId: string): Promise<TaskRow | undefined> {
  const [row] = await db.select().from(ingestionTasks).where(eq(ingestionTasks.id, taskId)).for('update');
  return row;
}

const OPEN_TASK: TaskStatus[] = ['PENDING', 'STARTED', 'RETRY'];

/**
 * Marks an open task STARTED (counting the attempt) and its document processing, together;
 * false when the task was finished or revoked meanwhile.
 */
export async function startTask(db: DbOrTx, taskId: string, documentId: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .update(ingestionTasks)
      .set({ status: 'STARTED', attempts: sql`${ingestionTasks.attempts} + 1`, errorMessage: null, updatedAt: new Date() })
      .where(and(eq(ingestionTasks.id, taskId), inArray(ingestionTasks.status, OPEN_TASK)))
      .returning({ id: ingestionTasks.id });
    if (rows.length === 0) return false;
    await tx.update(documents).set({ processingStatus: 'processing', updatedAt: new Date() }).where(eq(documents.id, documentId));
    return true;
  });
}

/** Updates a task that is still open (not finished, not revoked); undefined otherwise. */
export async function updateOpenTask(db: DbOrTx, taskId: string, values: Partial<typeof ingestionTasks.$inferInsert>) {
  const [row] = await db
    .update(ingestionTasks)
    .set({ ...values, updatedAt: new Date() })
    .where(and(eq(ingestionTasks.id, taskId), inArray(ingestionTasks.status, OPEN_TASK)))
    .returning();
  return row;
}

/** A FAILURE task back to PENDING (an operator's re-drive); undefined when it is not failed. */
export async function reopenFailedTask(db: DbOrTx, taskId: string) {
  const [row] = await db
    .update(ingestionTasks)
    .set({ status: 'PENDING', errorMessage: null, updatedAt: new Date() })
    .where(and(eq(ingestionTasks.id, taskId), eq(ingestionTasks.status, 'FAILURE')))
    .returning();
  return row;
}

export async function updateTask(db: DbOrTx, taskId: string, values: Partial<typeof ingestionTasks.$inferInsert>) {
  await db
    .update(ingestionTasks)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(ingestionTasks.id, taskId));
}

/** Marks every unfinished task of a document REVOKED (the document is being replaced or deleted). */
export async function revokeOpenTasks(db: DbOrTx, documentId: string): Promise<void> {
  await db
    .update(ingestionTasks)
    .set({ status: 'REVOKED', updatedAt: new Date() })
    .where(and(eq(ingestionTasks.documentId, documentId), inArray(ingestionTasks.status, OPEN_TASK)));
}

// --- chunks ---------------------------------------------------------------------------------------

export async function listChunks(db: DbOrTx, documentId: string, limit: number, offset: number) {
  const where = eq(documentChunks.documentId, documentId);
  const [rows, [total]] = await Promise.all([
    db
      .select({
        id: documentChunks.id,
        chunkIndex: documentChunks.chunkIndex,
        content: documentChunks.content,
        tokenCount: documentChunks.tokenCount,
        page: documentChunks.page,
      })
      .from(documentChunks)
      .where(where)
      .orderBy(documentChunks.chunkIndex)
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(documentChunks).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

/**
 * Replaces a document's chunks in one go (reprocessing never leaves a mix of old and new); returns
 * the new chunks' ids in the order given (their vectors are stored by the embeddings module).
 */
export async function replaceChunks(
  db: DbOrTx,
  document: { id: string; workspaceId: string },
  chunks: Array<{ index: number; content: string; tokenCount: number; page: number | null }>,
  /** The text-search configuration (search-language.ts) the chunks are indexed with. */
  searchConfig = 'english',
): Promise<string[]> {
  await db.delete(documentChunks).where(eq(documentChunks.documentId, document.id));
  const ids: string[] = [];
  for (let i = 0; i < chunks.length; i += 200) {
    const rows = await db
      .insert(documentChunks)
      .values(
        chunks.slice(i, i + 200).map((chunk) => ({
          documentId: document.id,
          workspaceId: document.workspaceId,
          chunkIndex: chunk.index,
          content: chunk.content,
          tokenCount: chunk.tokenCount,
          page: chunk.page,
          tsConfig: searchConfig,
          searchText: searchTextFor(chunk.content, searchConfig),
        })),
      )
      .returning({ id: documentChunks.id, index: documentChunks.chunkIndex });
    const byIndex = new Map(rows.map((row) => [row.index, row.id]));
    ids.push(...chunks.slice(i, i + 200).map((chunk) => byIndex.get(chunk.index)!));
  }
  return ids;
}

export { isNull };

/** Documents by processing status across every workspace (/metrics; one scan of a small column). */
export async function countDocumentsByStatus(db: DbOrTx): Promise<Array<{ status: string; count: number }>> {
  const rows = await db
    .select({ status: documents.processingStatus, count: count() })
    .from(documents)
    .groupBy(documents.processingStatus);
  return rows.map((row) => ({ status: row.status, count: Number(row.count) }));
}
