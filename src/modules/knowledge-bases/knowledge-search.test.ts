import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, useTestApp } from '../../../test/support/app.js';
import { createKb, kbsBase, LIFTED_THROTTLES, readyTextDocument } from '../../../test/support/documents.js';
import { newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { creditUsage } from '../billing/billing.table.js';
import { documentChunks, documents } from '../documents/documents.table.js';
import { fuse } from './knowledge-search.js';

/*
 * The `search_knowledge_base` backend: full-text search over the chunks of the knowledge bases
 * attached to a chat, fused by reciprocal rank with vector search when EMBEDDING_MODEL is set.
 */

const GARDEN = 'Tomatoes need full sun and deep watering twice a week. Pinch out the side shoots so the plant puts its energy into fruit.';
const FINANCE = 'The quarterly budget review covers travel expenses, reimbursements and the approval of new hires.';
const SECRET = 'The secret greenhouse grows prize tomatoes that need watering every morning.';

const t = useTestApp({ ...LIFTED_THROTTLES });

/** A chat with `attached` (garden + finance documents) attached and `detachedKb` (secret) not. */
async function world(app: TestApp) {
  const owner = await newUser(app);
  const ws = await newWorkspace(app, owner);
  const attached = await createKb(app, ws.id, owner, { name: 'Attached' });
  const detachedKb = await createKb(app, ws.id, owner, { name: 'Not attached' });
  const garden = await readyTextDocument(app, ws.id, owner, GARDEN, 'garden.txt', [attached.id]);
  const finance = await readyTextDocument(app, ws.id, owner, FINANCE, 'finance.txt', [attached.id]);
  const secret = await readyTextDocument(app, ws.id, owner, SECRET, 'secret.txt', [detachedKb.id]);
  const chat = await app.deps.services.chats.create(owner.id, ws.id, {
    name: 'Chat',
    system_prompt: '',
    agent_framework: 'tools',
    model_parameters: {},
  });
  const res = await app.post(`/api/workspaces/${ws.id}/chats/${chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: [attached.id] }, owner);
  expect(res.statusCode, res.body).toBe(200);
  const search = (query: string, limit = 6) => app.deps.services.knowledge.search({ workspaceId: ws.id, chatId: chat.id, query, limit });
  return { owner, ws, chat, attached, detachedKb, garden, finance, secret, search };
}

describe('lexical search (no EMBEDDING_MODEL)', () => {
  it('answers a natural-language question with the matching chunk of an attached knowledge base', async () => {
    const { garden, search } = await world(t);
    const hits = await search('How often should I water my tomato plants?');
    expect(hits.length).toBeGreaterThan(0);
    const [top] = hits;
    const [chunk] = await t.deps.database.db.select().from(documentChunks).where(eq(documentChunks.documentId, garden.id));
    expect(top).toEqual({
      chunk_id: chunk!.id,
      document_id: garden.id,
      document_name: 'garden.txt',
      content: GARDEN,
      page: null,
      score: expect.any(Number),
    });
    expect(top!.score).toBeGreaterThan(0);
  });

  it('never returns chunks of knowledge bases that are not attached', async () => {
    const { secret, search } = await world(t);
    const hits = await search('secret greenhouse prize tomatoes watering morning');
    expect(hits.map((h) => h.document_id)).not.toContain(secret.id);
  });

  it('never returns chunks of a document that is not ready', async () => {
    const { garden, search } = await world(t);
    for (const status of ['pending', 'processing', 'failed'] as const) {
      await t.deps.database.db.update(documents).set({ processingStatus: status }).where(eq(documents.id, garden.id));
      expect(await search('tomatoes watering')).toEqual([]);
    }
  });

  it('returns a chunk once, even when its document is in two attached knowledge bases', async () => {
    const { owner, ws, chat, garden, search } = await world(t);
    const second = await createKb(t, ws.id, owner, { name: 'Second' });
    await t.post(`${kbsBase(ws.id)}${second.id}/add-documents/`, { document_ids: [garden.id] }, owner);
    await t.post(`/api/workspaces/${ws.id}/chats/${chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: [second.id] }, owner);
    const hits = await search('tomatoes watering');
    expect(hits.filter((h) => h.document_id === garden.id)).toHaveLength(1);
    expect(new Set(hits.map((h) => h.chunk_id)).size).toBe(hits.length);
  });

  it('finds nothing for unrelated words or stop words only, and survives query syntax', async () => {
    const { search } = await world(t);
    expect(await search('quantum chromodynamics')).toEqual([]);
    expect(await search('the and of a')).toEqual([]);
    for (const query of ["tomato's & | ! ( ) :* <-> 'quote", '\\\\ % _ ; DROP TABLE documents; --', '🍅 tomatoes']) {
      await expect(search(query)).resolves.toEqual(expect.any(Array));
    }
    expect((await search("tomato's & watering!")).length).toBeGreaterThan(0);
  });

  it('honours the limit and ranks the better match first', async () => {
    const { garden, finance, search } = await world(t);
    const hits = await search('budget review for the tomatoes');
    expect(hits.map((h) => h.document_id).sort()).toEqual([garden.id, finance.id].sort());
    expect(await search('budget review for the tomatoes', 1)).toHaveLength(1);
  });

  it('reports whether a chat has knowledge bases attached', async () => {
    const { owner, ws, chat } = await world(t);
    expect(await t.deps.services.knowledge.hasKnowledge({ id: chat.id, workspaceId: chat.workspace })).toBe(true);
    const other = await t.deps.services.chats.create(owner.id, ws.id, { name: 'Bare', system_prompt: '', agent_framework: 'tools', model_parameters: {} });
    expect(await t.deps.services.knowledge.hasKnowledge({ id: other.id, workspaceId: other.workspace })).toBe(false);
  });
});

describe('reciprocal-rank fusion', () => {
  const candidate = (id: string) => ({ id, document_id: `doc-${id}`, document_name: `${id}.txt`, content: id, page: null });

  it('adds 1/(60 + rank) per list, so agreement beats a single first place', () => {
    const hits = fuse(
      [
        [candidate('a'), candidate('b')],
        [candidate('b'), candidate('c')],
      ],
      10,
    );
    expect(hits.map((h) => h.chunk_id)).toEqual(['b', 'a', 'c']);
    expect(hits[0]!.score).toBeCloseTo(1 / 62 + 1 / 61, 6);
    expect(hits[1]!.score).toBeCloseTo(1 / 61, 6);
    expect(hits[2]!.score).toBeCloseTo(1 / 62, 6);
    expect(fuse([[candidate('a'), candidate('b')], []], 1)).toHaveLength(1);
    expect(fuse([[], []], 5)).toEqual([]);
  });
});

describe('hybrid search (EMBEDDING_MODEL set)', () => {
  let app: TestApp;
  let fake: FakeModelServer;
  beforeAll(async () => {
    fake = await startFakeModelServer();
    app = await createTestApp({
      ...LIFTED_THROTTLES,
      ...fake.env,
      EMBEDDING_MODEL: 'openai:text-embedding-3-small',
      INGESTION_RETRY_BACKOFF_MS: '20',
    });
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });
  // The file's other app empties the tables before each test.
  beforeEach(() => app.deps.services.embeddings.forget());

  it('fuses full-text and vector ranks, embeds the query at 1536 dimensions and charges it', async () => {
    const w = await world(app);
    fake.reset();
    const hits = await w.search('tomatoes watering');
    const [request] = fake.requestsTo('openai.embeddings');
    expect(request!.body).toMatchObject({ model: 'text-embedding-3-small', dimensions: 1536, input: ['tomatoes watering'] });

    // Garden matches both retrievers: two reciprocal ranks of first place.
    expect(hits[0]).toMatchObject({ document_id: w.garden.id });
    expect(hits[0]!.score).toBeCloseTo(2 / 61, 5);
    // Finance shares no word: only the vector list (which ranks every embedded chunk) has it.
    const finance = hits.find((h) => h.document_id === w.finance.id);
    expect(finance!.score).toBeLessThanOrEqual(1 / 61);
    // Still only attached knowledge bases, whichever retriever found the chunk.
    expect(hits.map((h) => h.document_id)).not.toContain(w.secret.id);

    const ledger = await app.deps.database.db.select().from(creditUsage).where(eq(creditUsage.workspaceId, w.ws.id));
    expect(ledger.filter((row) => row.kind === 'embedding' && row.referenceId.startsWith('search:'))).toHaveLength(1);
  });

  it('falls back to full text when the query embedding fails', async () => {
    const w = await world(app);
    fake.reset();
    fake.enqueueEmbeddings({ status: 400 });
    const hits = await w.search('tomatoes watering');
    expect(hits).toHaveLength(1);
    expect(hits[0]).toMatchObject({ document_id: w.garden.id });
    expect(hits[0]!.score).toBeCloseTo(1 / 61, 5);
  });

  it('searches full text only when the credit is used up (no query embedding)', async () => {
    const w: { owner: TestUser; ws: { id: string }; search: (q: string) => Promise<unknown[]> } = await world(app);
    await app.deps.database.db.insert(creditUsage).values({
      workspaceId: w.ws.id,
      kind: 'chat',
      model: 'gpt-4.1-mini',
      costUsd: 5,
      referenceId: `spent-${w.ws.id}`,
    });
    fake.reset();
    expect(await w.search('tomatoes watering')).toHaveLength(1);
    expect(fake.requestsTo('openai.embeddings')).toHaveLength(0);
  });
});
