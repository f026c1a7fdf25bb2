import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { recordUsage } from '../../../test/support/billing.js';
import { fixture, ingestFile, LIFTED_THROTTLES } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { countTokens, type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { creditReservations, creditUsage } from '../billing/billing.table.js';
import * as repo from '../documents/documents.repo.js';
import { uploadKeyOf } from '../documents/documents.service.js';
import { documentChunks, documents } from '../documents/documents.table.js';
import { chunkEmbeddings, embeddingGenerations } from '../embeddings/embeddings.table.js';

/** Ingestion with EMBEDDING_MODEL pointed at the fake model server: vectors, their size, their cost. */
let fake: FakeModelServer;
const env: Record<string, string> = { ...LIFTED_THROTTLES, EMBEDDING_MODEL: 'openai:text-embedding-3-small', INGESTION_RETRY_BACKOFF_MS: '20' };
beforeAll(async () => {
  fake = await startFakeModelServer();
  Object.assign(env, fake.env);
});
afterAll(async () => {
  await fake?.close();
});
const t = useTestApp(env);
beforeEach(() => {
  fake.reset();
});

const db = () => t.deps.database.db;
const chunkRows = (id: string) => db().select().from(documentChunks).where(eq(documentChunks.documentId, id)).orderBy(documentChunks.chunkIndex);

async function setup() {
  const owner = await newUser(t);
  const ws = await newWorkspace(t, owner);
  return { owner, ws };
}

describe('embeddings', () => {
  it('stores a 1536-dimension vector per chunk, asked for at that size, and charges the credit', async () => {
    const { owner, ws } = await setup();
    const { document, status } = await ingestFile(t, ws.id, owner, {
      name: 'sample.pdf',
      contentType: 'application/pdf',
      bytes: fixture('sample.pdf'),
    });
    expect(status).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS' } });

    const chunks = await chunkRows(document.id);
    expect(chunks).toHaveLength(2);
    // Stored in the configured model's generation (created at first use), one vector per chunk.
    for (const chunk of chunks) {
      const [stored] = await db().select().from(chunkEmbeddings).where(eq(chunkEmbeddings.chunkId, chunk.id));
      expect(stored).toMatchObject({ documentId: document.id });
      const [generation] = await db().select().from(embeddingGenerations).where(eq(embeddingGenerations.id, stored!.generation));
      // Its index stores full-precision vectors on the embedded profile, half floats on PostgreSQL.
      const indexStorage = t.deps.database.kind === 'pglite' ? 'vector' : 'halfvec';
      expect(generation).toMatchObject({ model: 'openai:text-embedding-3-small', dimensions: 1536, state: 'active', indexStorage });
      expect(stored!.embedding).toHaveLength(1536);
      const norm = Math.hypot(...stored!.embedding);
      expect(norm).toBeCloseTo(1, 3);
    }

    const requests = fake.requestsTo('openai.embeddings');
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body).toMatchObject({ model: 'text-embedding-3-small', dimensions: 1536 });
    expect(requests[0]!.body.input).toEqual(chunks.map((c) => c.content));

    const ledger = await db().select().from(creditUsage).where(eq(creditUsage.workspaceId, ws.id));
    const tokens = chunks.reduce((sum, c) => sum + countTokens(c.content), 0);
    expect(ledger).toEqual([
      expect.objectContaining({ kind: 'embedding', model: 'text-embedding-3-small', userId: owner.id, inputTokens: tokens }),
    ]);
    expect(ledger[0]!.costUsd).toBeCloseTo((tokens * 0.02) / 1e6, 10);
    // The reservation made before the call is closed.
    const open = (await db().select().from(creditReservations)).filter((r) => r.closedAt === null);
    expect(open).toEqual([]);

  });

  it('a failing embedding provider ends the task in FAILURE after its attempts, with nothing charged', async () => {
    const { owner, ws } = await setup();
    // 400 is not retried by the SDK itself, so each job attempt makes one call.
    fake.enqueueEmbeddings({ status: 400 }, { status: 400 }, { status: 400 });
    const { document, status } = await ingestFile(t, ws.id, owner, {
      name: 'notes.txt',
      contentType: 'text/plain',
      bytes: fixture('notes.txt'),
    });
    expect(status).toMatchObject({
      processing_status: 'failed',
      task: { status: 'FAILURE', error_message: 'Creating search embeddings failed. Please try again later.' },
    });
    expect(fake.requestsTo('openai.embeddings')).toHaveLength(3);
    expect(await chunkRows(document.id)).toEqual([]);
    expect(await db().select().from(creditUsage)).toEqual([]);
    expect((await db().select().from(creditReservations)).filter((r) => r.closedAt === null)).toEqual([]);
  });

  it('fails with the credit message when the credit is used up before embedding', async () => {
    const { owner, ws } = await setup();
    const bytes = fixture('notes.txt');
    const { document, upload } = await t.deps.services.documents.upload(owner.id, ws.id, {
      name: 'notes.txt',
      content_type: 'text/plain',
      size: bytes.length,
      knowledge_base_ids: [],
    });
    const url = new URL(upload.url);
    await t.app.inject({ method: 'PUT', url: `${url.pathname}${url.search}`, headers: upload.headers, payload: bytes });
    // Confirmed, as confirm-upload/ leaves it: the file moved to the document's key.
    const [row] = await db().update(documents).set({ storedAt: new Date() }).where(eq(documents.id, document.id)).returning();
    await t.deps.storage.commitUpload(uploadKeyOf(row!), row!.storageKey);
    // The credit was spent between the confirmation and the job: queue the job without the checks.
    const task = await repo.insertTask(db(), document.id);
    await recordUsage(t, ws.id, 5);
    await t.deps.jobs.enqueue('documents.ingest', { taskId: task.id }, { id: task.id });
    await t.deps.jobs.drain();
    const status = await t.deps.services.documents.processingStatus(owner.id, ws.id, document.id);
    expect(status).toMatchObject({ processing_status: 'failed', task: { status: 'FAILURE' } });
    expect(status.task!.error_message).toMatch(/credit/i);
    expect(fake.requestsTo('openai.embeddings')).toHaveLength(0);
  });
});
