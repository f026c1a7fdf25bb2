import { eq, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { docsBase, fixture, LIFTED_THROTTLES, readyTextDocument, startUpload, putToSignedUrl } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import * as jobsRepo from '../../platform/queue/jobs.repo.js';
import { backgroundJobs } from '../../platform/queue/jobs.table.js';
import * as repo from '../documents/documents.repo.js';
import { uploadKeyOf } from '../documents/documents.service.js';
import { documentChunks, documents, ingestionTasks } from '../documents/documents.table.js';

/**
 * The ingestion job's life cycle: retries, the final FAILURE, recovery after a crash, and
 * idempotency. (Real worker processes killed mid-ingestion: ingestion.faults.test.ts.) INGESTION_RETRY_BACKOFF_MS keeps the retries fast (production: 5 s, doubling).
 */
const t = useTestApp({ ...LIFTED_THROTTLES, INGESTION_RETRY_BACKOFF_MS: '20' });

afterEach(() => {
  vi.restoreAllMocks();
});

const db = () => t.deps.database.db;
const taskRows = (id: string) => db().select().from(ingestionTasks).where(eq(ingestionTasks.documentId, id)).orderBy(ingestionTasks.createdAt);
const documentRow = async (id: string) => (await db().select().from(documents).where(eq(documents.id, id)))[0]!;

async function setup() {
  const owner = await newUser(t);
  const ws = await newWorkspace(t, owner);
  return { owner, ws, base: docsBase(ws.id) };
}

/** An upload whose bytes are stored but not yet confirmed (no task). */
async function storedUpload(wsId: string, owner: Awaited<ReturnType<typeof newUser>>) {
  const bytes = fixture('notes.txt');
  const { document, upload } = await startUpload(t, wsId, owner, { name: 'notes.txt', content_type: 'text/plain', size: bytes.length });
  expect((await putToSignedUrl(t, upload, bytes)).statusCode).toBe(200);
  return document as { id: string };
}

describe('retries and failure', () => {
  it('ends FAILURE after all attempts when the handler keeps throwing unexpectedly; never stuck', async () => {
    const { owner, ws, base } = await setup();
    const statuses: string[] = [];
    const failure = new Error('EIO: i/o error, read /var/data/files/secret');
    vi.spyOn(t.deps.storage, 'get').mockImplementation(async () => {
      const [task] = await db().select().from(ingestionTasks);
      statuses.push(task!.status);
      throw failure;
    });
    const document = await storedUpload(ws.id, owner);
    expect((await t.post(`${base}${document.id}/confirm-upload/`, {}, owner)).statusCode).toBe(202);
    await t.deps.jobs.drain();

    const [task] = await taskRows(document.id);
    expect(task).toMatchObject({ status: 'FAILURE', attempts: 3 });
    expect(task!.errorMessage).toBe('The document could not be processed. Please try again later.');
    expect((await documentRow(document.id)).processingStatus).toBe('failed');
    // Each run is STARTED while it works.
    expect(statuses).toEqual(['STARTED', 'STARTED', 'STARTED']);
    const status = (await t.get(`${base}${document.id}/processing-status/`, owner)).json();
    expect(status).toMatchObject({ processing_status: 'failed', task: { status: 'FAILURE' } });
    expect(JSON.stringify(status)).not.toContain('EIO');
  });

  it('shows RETRY between attempts and succeeds when a later attempt works', async () => {
    const { owner, ws, base } = await setup();
    const storage = t.deps.storage;
    const original = storage.get.bind(storage);
    let seenBetween: { task: string; document: string } | undefined;
    vi.spyOn(storage, 'get')
      .mockImplementationOnce(async () => {
        throw new Error('socket hang up');
      })
      .mockImplementationOnce(async (key: string) => {
        const [task] = await db().select().from(ingestionTasks);
        const [doc] = await db().select().from(documents);
        seenBetween = { task: task!.status, document: doc!.processingStatus };
        return original(key);
      });
    const document = await storedUpload(ws.id, owner);
    await t.post(`${base}${document.id}/confirm-upload/`, {}, owner);
    await t.deps.jobs.drain();

    const [task] = await taskRows(document.id);
    expect(task).toMatchObject({ status: 'SUCCESS', attempts: 2, errorMessage: null });
    expect(seenBetween).toEqual({ task: 'STARTED', document: 'processing' });
    expect((await documentRow(document.id)).processingStatus).toBe('ready');
  });

  it('records RETRY with a user-facing message while another attempt is due', async () => {
    const { owner, ws } = await setup();
    const document = await storedUpload(ws.id, owner);
    await db().update(documents).set({ storedAt: new Date() }).where(eq(documents.id, document.id));
    const failure = new Error('connection reset');
    vi.spyOn(t.deps.storage, 'get').mockRejectedValue(failure);
    // One attempt as the job system runs it (the task is not queued here): a retryable failure throws as is...
    const task = await repo.insertTask(db(), document.id);
    await expect(t.deps.services.ingestion.run(task.id)).rejects.toBe(failure);
    expect((await taskRows(document.id))[0]).toMatchObject({ status: 'STARTED', attempts: 1 });
    // ...and the job system marks the retry in the transaction that queues the next attempt.
    await db().transaction((tx) => t.deps.services.ingestion.markRetry(tx, task.id, { reason: 'failed', error: failure }));
    expect((await taskRows(document.id))[0]).toMatchObject({
      status: 'RETRY',
      attempts: 1,
      errorMessage: 'The document could not be processed. Please try again later.',
    });
    expect((await documentRow(document.id)).processingStatus).toBe('processing');
  });
});

describe('after a crash', () => {
  it('the reconciler re-drives PENDING, STARTED and RETRY tasks a dead process left, and they complete', async () => {
    const { owner, ws, base } = await setup();
    const ids: string[] = [];
    for (const status of ['PENDING', 'STARTED', 'RETRY'] as const) {
      const document = await storedUpload(ws.id, owner);
      // Confirmed, as confirm-upload/ leaves it: the file moved to the document's key.
      const [row] = await db().update(documents).set({ storedAt: new Date() }).where(eq(documents.id, document.id)).returning();
      await t.deps.storage.commitUpload(uploadKeyOf(row!), row!.storageKey);
      // As if the process died after committing the task and its job, before (or while) running it.
      const task = await repo.insertTask(db(), document.id);
      await repo.updateTask(db(), task.id, { status });
      const job = await db().transaction((tx) => t.deps.jobs.record(tx, 'documents.ingest', { taskId: task.id }, { id: task.id }));
      if (status === 'STARTED') await jobsRepo.claimJob(db(), job.id, job.deliveryId, 'a-dead-worker', 1);
      ids.push(document.id);
    }
    // Long enough ago for the reconciler to look: the two queued ones were never on the queue.
    const ago = sql`now() - interval '1 hour'`;
    await db().update(backgroundJobs).set({ deliveredAt: ago, runAfter: ago, leaseUntil: sql`now() - interval '1 second'` });
    expect(await t.deps.jobs.reconcile()).toEqual({ delivered: 0, redriven: 3, failed: 0 });
    await t.deps.jobs.drain();
    for (const id of ids) {
      const status = (await t.get(`${base}${id}/processing-status/`, owner)).json();
      expect(status).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS' } });
    }
    expect(await t.deps.jobs.reconcile()).toEqual({ delivered: 0, redriven: 0, failed: 0 });
  });

  it('a task whose last attempt died ends FAILURE with a user-facing message, its document failed', async () => {
    const { owner, ws, base } = await setup();
    const document = await storedUpload(ws.id, owner);
    await db().update(documents).set({ storedAt: new Date() }).where(eq(documents.id, document.id));
    const task = await repo.insertTask(db(), document.id);
    await repo.updateTask(db(), task.id, { status: 'STARTED', attempts: 3 });
    await repo.updateDocument(db(), document.id, { processingStatus: 'processing' });
    const job = await db().transaction((tx) => t.deps.jobs.record(tx, 'documents.ingest', { taskId: task.id }, { id: task.id }));
    await jobsRepo.claimJob(db(), job.id, job.deliveryId, 'a-dead-worker', 1);
    await db().update(backgroundJobs).set({ attempts: 3, leaseUntil: sql`now() - interval '1 second'` });
    expect(await t.deps.jobs.reconcile()).toEqual({ delivered: 0, redriven: 0, failed: 1 });
    const status = (await t.get(`${base}${document.id}/processing-status/`, owner)).json();
    expect(status).toMatchObject({
      processing_status: 'failed',
      task: { status: 'FAILURE', error_message: 'The document could not be processed. Please try again later.' },
    });
  });
});

describe('idempotency', () => {
  it('running a finished task again changes nothing', async () => {
    const { owner, ws } = await setup();
    const document = await readyTextDocument(t, ws.id, owner, 'Text about lighthouses and the sea.');
    const [task] = await taskRows(document.id);
    const chunksBefore = await db().select().from(documentChunks);
    await t.deps.services.ingestion.run(task!.id);
    expect(await db().select().from(documentChunks)).toEqual(chunksBefore);
    expect((await taskRows(document.id))[0]).toEqual(task);
  });

  it('a revoked task does not run', async () => {
    const { owner, ws } = await setup();
    const document = await storedUpload(ws.id, owner);
    await db().update(documents).set({ storedAt: new Date() }).where(eq(documents.id, document.id));
    const task = await repo.insertTask(db(), document.id);
    await repo.revokeOpenTasks(db(), document.id);
    await t.deps.services.ingestion.run(task.id);
    expect((await taskRows(document.id))[0]).toMatchObject({ status: 'REVOKED', attempts: 0 });
    expect(await db().select().from(documentChunks)).toEqual([]);
    expect((await documentRow(document.id)).processingStatus).toBe('pending');
  });
});
