import { and, eq, like } from 'drizzle-orm';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp, useTestApp } from '../../../test/support/app.js';
import { createKb, docsBase, LIFTED_THROTTLES, readyTextDocument, uploadFile } from '../../../test/support/documents.js';
import { newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { queryRows } from '../../db/client.js';
import { creditUsage } from '../billing/billing.table.js';
import { documentChunks } from '../documents/documents.table.js';
import { backgroundJobs } from '../../platform/queue/jobs.table.js';
import { chunkEmbeddings, embeddingGenerations } from './embeddings.table.js';

/*
 * Changing EMBEDDING_MODEL: a new generation is built in the background (metered, resumable)
 * while search keeps using the previous vectors; then it becomes the searched one and the old
 * vectors and index go. Two apps on one database play the process before and after the change.
 */

const SMALL = 'openai:text-embedding-3-small';
const LARGE = 'openai:text-embedding-3-large';
const GARDEN = 'Tomatoes need full sun and deep watering twice a week. Pinch out the side shoots so the plant puts its energy into fruit.';
const FINANCE = 'The quarterly budget review covers travel expenses, reimbursements and the approval of new hires.';

let fake: FakeModelServer;
const env: Record<string, string> = { ...LIFTED_THROTTLES, EMBEDDING_MODEL: SMALL, INGESTION_RETRY_BACKOFF_MS: '20' };
beforeAll(async () => {
  fake = await startFakeModelServer();
  Object.assign(env, fake.env);
});
afterAll(async () => {
  await fake?.close();
});
const t = useTestApp(env);
beforeEach(() => fake.reset());

const db = () => t.deps.database.db;
const abort = () => new AbortController().signal;

async function world(app: TestApp, owner?: TestUser) {
  const user = owner ?? (await newUser(app));
  const ws = await newWorkspace(app, user);
  const kb = await createKb(app, ws.id, user, { name: 'Notes' });
  const garden = await readyTextDocument(app, ws.id, user, GARDEN, 'garden.txt', [kb.id]);
  const finance = await readyTextDocument(app, ws.id, user, FINANCE, 'finance.txt', [kb.id]);
  const chat = await app.deps.services.chats.create(user.id, ws.id, { name: 'Chat', system_prompt: '', agent_framework: 'tools', model_parameters: {} });
  const res = await app.post(`/api/workspaces/${ws.id}/chats/${chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: [kb.id] }, user);
  expect(res.statusCode, res.body).toBe(200);
  return { owner: user, ws, kb, garden, finance, chat };
}

const generations = () => db().select().from(embeddingGenerations).orderBy(embeddingGenerations.id);
const vectorsOf = (generation: number) => db().select().from(chunkEmbeddings).where(eq(chunkEmbeddings.generation, generation));
const indexes = async () =>
  (await queryRows<{ indexname: string }>(db(), sql`SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunk_embeddings_hnsw_%'`)).map(
    (r) => r.indexname,
  );

describe('changing EMBEDDING_MODEL', () => {
  let after: TestApp | undefined;
  afterAll(async () => {
    await after?.close();
  });

  it('re-embeds in the background, metered, while search keeps the old vectors; then switches and drops them', async () => {
    const w = await world(t);
    const [small] = await generations();
    expect(small).toMatchObject({ model: SMALL, dimensions: 1536, state: 'active' });
    expect(await vectorsOf(small!.id)).toHaveLength(2);
    expect(await indexes()).toEqual([`chunk_embeddings_hnsw_${small!.id}`]);

    // The process after the change (no worker: this test runs the backfill job's handler itself).
    after = await createTestApp({ ...env, EMBEDDING_MODEL: LARGE }, {}, { startWorker: false });
    await after.deps.services.embeddings.ready();
    const [, large] = await generations();
    // 3,072 dimensions: past the 2,000 a full-precision HNSW index takes, so half floats on every profile.
    expect(large).toMatchObject({ model: LARGE, dimensions: 3072, state: 'building', indexStorage: 'halfvec' });
    expect(await indexes()).toEqual(expect.arrayContaining([`chunk_embeddings_hnsw_${large!.id}`]));

    // While it builds, search embeds the query with the searched (old) model and finds by vector.
    fake.reset();
    const during = await after.deps.services.knowledge.search({ workspaceId: w.ws.id, chatId: w.chat.id, query: 'quarterly budget', limit: 6 });
    expect(fake.requestsTo('openai.embeddings').map((r) => r.body)).toEqual([
      expect.objectContaining({ model: 'text-embedding-3-small', dimensions: 1536 }),
    ]);
    expect(during.map((h) => h.document_id)).toEqual(expect.arrayContaining([w.finance.id, w.garden.id]));

    // A document ingested meanwhile (by the process before the change, once its view of the
    // generations is renewed, GENERATIONS_TTL_MS) gets vectors in both generations.
    // (Not drain(): the recorded backfill job stays unfinished until this test runs it.)
    t.deps.services.embeddings.forget();
    const { document: late } = await uploadFile(t, w.ws.id, w.owner, {
      name: 'late.txt',
      contentType: 'text/plain',
      bytes: Buffer.from('Late notes about compost and mulch.'),
      knowledge_base_ids: [w.kb.id],
    });
    await expect.poll(async () => (await t.get(`${docsBase(w.ws.id)}${late.id}/processing-status/`, w.owner)).json().processing_status, { timeout: 10_000 }).toBe('ready');
    const [lateChunk] = await db().select().from(documentChunks).where(eq(documentChunks.documentId, late.id));
    const lateVectors = await db().select().from(chunkEmbeddings).where(eq(chunkEmbeddings.chunkId, lateChunk!.id));
    expect(lateVectors.map((v) => [v.generation, v.embedding.length]).sort()).toEqual([
      [small!.id, 1536],
      [large!.id, 3072],
    ]);

    // The backfill: the two older chunks (the late one has its vector), then the switch.
    fake.reset();
    await after.deps.services.embeddings.backfill(large!.id, { signal: abort() });
    const requests = fake.requestsTo('openai.embeddings');
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body).toMatchObject({ model: 'text-embedding-3-large', dimensions: 3072 });
    expect([...(requests[0]!.body.input as string[])].sort()).toEqual([FINANCE, GARDEN].sort());
    expect((await generations()).map((g) => [g.id, g.state])).toEqual([[large!.id, 'active']]);
    expect(await vectorsOf(small!.id)).toHaveLength(0);
    expect(await vectorsOf(large!.id)).toHaveLength(3);
    expect(await indexes()).toEqual([`chunk_embeddings_hnsw_${large!.id}`]);
    const charges = await db()
      .select()
      .from(creditUsage)
      .where(and(eq(creditUsage.workspaceId, w.ws.id), like(creditUsage.referenceId, 'reembed:%')));
    expect(charges).toEqual([expect.objectContaining({ kind: 'embedding', model: 'text-embedding-3-large', inputTokens: expect.any(Number) })]);
    expect(charges[0]!.inputTokens).toBeGreaterThan(0);

    // Search now embeds with the new model and still finds by vector.
    fake.reset();
    after.deps.services.embeddings.forget();
    const switched = await after.deps.services.knowledge.search({ workspaceId: w.ws.id, chatId: w.chat.id, query: 'quarterly budget', limit: 6 });
    expect(fake.requestsTo('openai.embeddings').map((r) => r.body)).toEqual([
      expect.objectContaining({ model: 'text-embedding-3-large', dimensions: 3072 }),
    ]);
    expect(switched.map((h) => h.document_id)).toEqual(expect.arrayContaining([w.finance.id, w.garden.id, late.id]));
    await after.close();
    after = undefined;
  });

  it('resumes where a failed run stopped: what was embedded is not embedded again', async () => {
    const one = await world(t);
    const two = await world(t);
    after = await createTestApp({ ...env, EMBEDDING_MODEL: LARGE }, {}, { startWorker: false });
    await after.deps.services.embeddings.ready();
    const [, large] = await generations();

    // The first workspace's batch succeeds; the second's fails (and its two retries).
    fake.reset();
    fake.enqueueEmbeddings({}, { status: 500 }, { status: 500 }, { status: 500 });
    await expect(after.deps.services.embeddings.backfill(large!.id, { signal: abort() })).rejects.toThrow();
    expect(await vectorsOf(large!.id)).toHaveLength(2);
    expect((await generations()).find((g) => g.id === large!.id)!.state).toBe('building');

    fake.reset();
    await after.deps.services.embeddings.backfill(large!.id, { signal: abort() });
    const requests = fake.requestsTo('openai.embeddings');
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body.input).toHaveLength(2);
    expect(await vectorsOf(large!.id)).toHaveLength(4);
    expect((await generations()).map((g) => g.state)).toEqual(['active']);
    // One charge per workspace.
    const charges = await db().select().from(creditUsage).where(like(creditUsage.referenceId, 'reembed:%'));
    expect(charges.map((c) => c.workspaceId).sort()).toEqual([one.ws.id, two.ws.id].sort());
    await after.close();
    after = undefined;
  });

  it('skips a workspace the billing gate refuses, switches anyway, and charges it nothing', async () => {
    const paying = await world(t);
    const spent = await world(t);
    await db().insert(creditUsage).values({ workspaceId: spent.ws.id, kind: 'chat', model: 'gpt-4.1-mini', costUsd: 5, referenceId: `spent-${spent.ws.id}` });
    after = await createTestApp({ ...env, EMBEDDING_MODEL: LARGE }, {}, { startWorker: false });
    await after.deps.services.embeddings.ready();
    const [, large] = await generations();

    fake.reset();
    await after.deps.services.embeddings.backfill(large!.id, { signal: abort() });
    const requests = fake.requestsTo('openai.embeddings');
    expect(requests).toHaveLength(1);
    expect([...(requests[0]!.body.input as string[])].sort()).toEqual([FINANCE, GARDEN].sort());
    const embedded = await vectorsOf(large!.id);
    expect(new Set(embedded.map((v) => v.documentId))).toEqual(new Set([paying.garden.id, paying.finance.id]));
    expect((await generations()).map((g) => [g.id, g.state])).toEqual([[large!.id, 'active']]);
    const charges = await db().select().from(creditUsage).where(like(creditUsage.referenceId, 'reembed:%'));
    expect(charges.map((c) => c.workspaceId)).toEqual([paying.ws.id]);
    await after.close();
    after = undefined;
  });

  const backfillJobs = () => db().select().from(backgroundJobs).where(eq(backgroundJobs.name, 'embeddings.backfill'));

  /**
   * Runs `body` with a process after the change to LARGE (`after`) while another connection holds
   * document_chunks locked: counting the chunks that lack vectors reads every chunk, held up here
   * as by a large table. `release` ends the lock. Needs a second connection: PostgreSQL only.
   */
  async function withChunksLocked(body: (release: () => Promise<unknown>) => Promise<void>) {
    await world(t);
    after = await createTestApp({ ...env, EMBEDDING_MODEL: LARGE }, {}, { startWorker: false });
    const other = new pg.Client({ connectionString: t.database.url });
    await other.connect();
    const release = () => other.query('ROLLBACK');
    try {
      await other.query('BEGIN');
      await other.query('LOCK TABLE document_chunks IN ACCESS EXCLUSIVE MODE');
      await body(release);
    } finally {
      await release().catch(() => undefined);
      await other.end();
      await after?.close();
      after = undefined;
    }
  }

  it.skipIf(!process.env.TEST_DATABASE_URL)(
    'a process is ready once its generations agree: it does not wait for the count of chunks lacking vectors (PostgreSQL)',
    () =>
      withChunksLocked(async (release) => {
        const ready = after!.deps.services.embeddings.ready().then(() => 'ready');
        const waited = new Promise((resolve) => setTimeout(resolve, 3_000, 'still waiting'));
        expect(await Promise.race([ready, waited])).toBe('ready');
        const [, large] = await generations();
        expect(large).toMatchObject({ model: LARGE, state: 'building' });
        expect(await backfillJobs()).toHaveLength(0);
        // Once the count can run, the backfill is queued in the background.
        await release();
        await expect.poll(async () => (await backfillJobs()).map((job) => job.payload), { timeout: 10_000 }).toEqual([{ generation: large!.id }]);
      }),
  );

  it.skipIf(!process.env.TEST_DATABASE_URL)(
    'closing a process waits for its background check, so nothing is queued after it closed (PostgreSQL)',
    () =>
      withChunksLocked(async (release) => {
        await after!.deps.services.embeddings.ready();
        const closing = after!.close().then(() => 'closed');
        const waited = new Promise((resolve) => setTimeout(resolve, 500, 'still closing'));
        expect(await Promise.race([closing, waited])).toBe('still closing');
        await release();
        expect(await closing).toBe('closed');
        after = undefined;
        const [, large] = await generations();
        expect((await backfillJobs()).map((job) => job.payload)).toEqual([{ generation: large!.id }]);
      }),
  );

  it.skipIf(!process.env.TEST_DATABASE_URL)(
    'a failed background check is tried again a minute later, not at every call before that (PostgreSQL)',
    () =>
      withChunksLocked(async (release) => {
        // Only Date is faked: the retry is timed by the clock, everything else runs for real.
        vi.useFakeTimers({ toFake: ['Date'] });
        try {
          const embeddings = after!.deps.services.embeddings;
          await embeddings.ready();
          // The count of chunks lacking vectors waits on the lock; it is then cancelled on the server
          // (the statement alone fails; its connection stays in the pool).
          const waiting = () =>
            queryRows<{ pid: number }>(
              db(),
              // This worker's database only: the other test files' servers share pg_stat_activity.
              sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%NOT EXISTS (SELECT 1 FROM chunk_embeddings%'`,
            );
          await expect.poll(async () => (await waiting()).length, { timeout: 10_000 }).toBe(1);
          await queryRows(db(), sql`SELECT pg_cancel_backend(${(await waiting())[0]!.pid})`);
          await embeddings.settled();
          await release();
          expect(await backfillJobs()).toHaveLength(0);

          // Within the minute, calls do not try again (each would read every chunk).
          vi.setSystemTime(Date.now() + 59_000);
          await embeddings.ready();
          await embeddings.settled();
          expect(await backfillJobs()).toHaveLength(0);

          // A minute after the failure, the next call does, and queues the backfill.
          vi.setSystemTime(Date.now() + 2_000);
          await embeddings.ready();
          await embeddings.settled();
          const [, large] = await generations();
          expect((await backfillJobs()).map((job) => job.payload)).toEqual([{ generation: large!.id }]);
        } finally {
          vi.useRealTimers();
        }
      }),
  );

  it('adopts vectors made before models were recorded when the sizes agree', async () => {
    await world(t);
    const [current] = await generations();
    await db().update(embeddingGenerations).set({ model: null }).where(eq(embeddingGenerations.id, current!.id));
    t.deps.services.embeddings.forget();
    fake.reset();
    await t.deps.services.embeddings.ready();
    expect(await generations()).toEqual([expect.objectContaining({ id: current!.id, model: SMALL, state: 'active' })]);
    // Nothing to re-embed.
    expect(fake.requestsTo('openai.embeddings')).toHaveLength(0);
  });
});
