import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { injectStream, useChatTestApp } from '../../../test/support/chat.js';
import { createKb, LIFTED_THROTTLES, readyTextDocument } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { type FakeReranker, startFakeReranker } from '../../../test/support/fake-reranker.js';
import type { TestApp } from '../../../test/support/app.js';
import { captureLog } from '../../../test/support/log.js';
import { noServiceMetrics } from '../../platform/metrics.js';
import { createKnowledgeSearch } from './knowledge-search.js';
import { createReranker } from './reranker.js';

/*
 * Reranking with RERANK_MODEL set (a fake Cohere-shaped reranker over HTTP): the fused candidates
 * go to the reranker, the reply's sources come back in its order with `rerank_score`, and a
 * failing or hanging reranker leaves the fused order (with a warning).
 */

const GARDEN = 'Tomatoes need full sun and deep watering twice a week. Pinch out the side shoots so the plant puts its energy into fruit.';
const FINANCE = 'The quarterly budget review covers travel expenses, reimbursements and the approval of new hires.';
const QUERY = 'tomatoes watering budget';

let reranker: FakeReranker;
const env: Record<string, string> = { ...LIFTED_THROTTLES };
// Registered before useChatTestApp's hooks, so the app starts with the fake's address.
beforeAll(async () => {
  reranker = await startFakeReranker();
  Object.assign(env, { RERANK_MODEL: 'cohere:rerank-v3.5', RERANK_BASE_URL: reranker.baseUrl('cohere'), COHERE_API_KEY: 'co-test' });
});
afterAll(async () => {
  await reranker?.close();
});
const { t, fake } = useChatTestApp(env);

/** A `direct` chat with the garden and finance documents attached. */
async function world(app: TestApp) {
  const owner = await newUser(app);
  const ws = await newWorkspace(app, owner);
  const kb = await createKb(app, ws.id, owner, { name: 'Attached' });
  const garden = await readyTextDocument(app, ws.id, owner, GARDEN, 'garden.txt', [kb.id]);
  const finance = await readyTextDocument(app, ws.id, owner, FINANCE, 'finance.txt', [kb.id]);
  const chat = await app.deps.services.chats.create(owner.id, ws.id, { name: 'Chat', system_prompt: '', agent_framework: 'direct', model_parameters: {} });
  const res = await app.post(`/api/workspaces/${ws.id}/chats/${chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: [kb.id] }, owner);
  expect(res.statusCode, res.body).toBe(200);
  const idOf = (content: string) => (content === GARDEN ? garden.id : content === FINANCE ? finance.id : content);
  return { owner, ws, chat, garden, finance, idOf };
}

/** The reranker under test scores the last candidate it is sent highest: the reverse of the fused order. */
const reverse = (_query: string, _document: string, index: number, count: number) => (index + 1) / count;

describe('reranking (RERANK_MODEL set)', () => {
  it('sends the fused candidates with the query and cites the sources in the reranked order, with rerank_score', async () => {
    const w = await world(t);
    reranker.reset();
    reranker.score = reverse;
    const { res, done } = await injectStream(t, `/api/workspaces/${w.ws.id}/chats/${w.chat.id}/messages/stream/`, { content: QUERY }, w.owner);
    expect(res.statusCode, res.body).toBe(200);

    expect(reranker.requests).toHaveLength(1);
    const [request] = reranker.requests;
    expect(request!.headers.authorization).toBe('Bearer co-test');
    expect(request!.body).toMatchObject({ model: 'rerank-v3.5', query: QUERY, top_n: 2 });
    const fused = (request!.body.documents as string[]).map(w.idOf);
    expect([...fused].sort()).toEqual([w.garden.id, w.finance.id].sort());

    const sources = (await t.get(`/api/workspaces/${w.ws.id}/chats/${w.chat.id}/messages/${done.message_id}/`, w.owner)).json().sources;
    expect(sources.map((s: { document_id: string }) => s.document_id)).toEqual([...fused].reverse());
    expect(sources).toEqual([
      expect.objectContaining({ document_id: fused[1], score: expect.any(Number), rerank_score: 1 }),
      expect.objectContaining({ document_id: fused[0], score: expect.any(Number), rerank_score: 0.5 }),
    ]);
    // The fused score is kept: the reranked first was the fused second.
    expect(sources[0].score).toBeLessThanOrEqual(sources[1].score);
    // The done event carries the same sources; the model saw the excerpts in the reranked order.
    expect(done.sources).toEqual(sources);
    const system = fake.requestsTo('openai.chat')[0]!.body.messages[0].content as string;
    const first = sources[0].document_id === w.garden.id ? 'garden.txt' : 'finance.txt';
    expect(system).toContain(`[1] (${first})`);
  });

  it('keeps the fused order when the reranker fails: the reply still works, sources have no rerank_score', async () => {
    const w = await world(t);
    reranker.reset();
    reranker.fail = 'status';
    const { res, done } = await injectStream(t, `/api/workspaces/${w.ws.id}/chats/${w.chat.id}/messages/stream/`, { content: QUERY }, w.owner);
    expect(res.statusCode, res.body).toBe(200);
    expect(reranker.requests).toHaveLength(1);
    const fused = (reranker.requests[0]!.body.documents as string[]).map(w.idOf);
    expect(done.sources.map((s: { document_id: string }) => s.document_id)).toEqual(fused);
    for (const source of done.sources) expect(source).not.toHaveProperty('rerank_score');
  });

  describe('the search itself, with a short timeout and a captured log', () => {
    const searchWith = (app: TestApp, captured: ReturnType<typeof captureLog>) =>
      createKnowledgeSearch({
        db: app.deps.database.db,
        // Full text only: no query vector.
        embeddings: { queryVector: async () => null },
        log: captured.log,
        metrics: noServiceMetrics,
        reranker: createReranker(
          { ...app.deps.config, RERANK_MODEL: 'cohere:rerank-v3.5', RERANK_BASE_URL: reranker.baseUrl('cohere') },
          { timeoutMs: 300 },
        ),
      });

    it('reorders by the reranker, asks it about 3× the limit, and returns the limit', async () => {
      const w = await world(t);
      reranker.reset();
      reranker.score = reverse;
      const captured = captureLog();
      const hits = await searchWith(t, captured).search({ workspaceId: w.ws.id, chatId: w.chat.id, query: QUERY, limit: 1 });
      const fused = (reranker.requests[0]!.body.documents as string[]).map(w.idOf);
      expect(fused).toHaveLength(2); // 3 × 1 asked, both candidates there are
      expect(hits).toEqual([expect.objectContaining({ document_id: fused[1], rerank_score: 1 })]);
      expect(captured.lines().filter((l) => l.level >= 40)).toEqual([]);
    });

    for (const failure of ['status', 'hang', 'malformed'] as const) {
      it(`falls back to the fused order and logs a warning when the reranker ${failure === 'hang' ? 'hangs past the timeout' : `answers ${failure}`}`, async () => {
        const w = await world(t);
        reranker.reset();
        reranker.fail = failure;
        const captured = captureLog();
        const started = Date.now();
        const hits = await searchWith(t, captured).search({ workspaceId: w.ws.id, chatId: w.chat.id, query: QUERY, limit: 6 });
        expect(Date.now() - started).toBeLessThan(3000);
        const fused = (reranker.requests[0]!.body.documents as string[]).map(w.idOf);
        expect(hits.map((h) => h.document_id)).toEqual(fused);
        for (const hit of hits) expect(hit).not.toHaveProperty('rerank_score');
        const warnings = captured.lines().filter((l) => l.level === 40);
        expect(warnings).toEqual([expect.objectContaining({ msg: 'reranking failed; keeping the fused order', provider: 'cohere', model: 'rerank-v3.5' })]);
      });
    }
  });
});
