import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeReranker, type RerankShape, startFakeReranker } from '../../../test/support/fake-reranker.js';
import { applyRerank, createReranker, RerankError, type RerankConfig } from './reranker.js';

/*
 * The reranker port against a fake server over real HTTP: each provider's request shape, the
 * parsing of its answer, and the failures that make search keep the fused order.
 */

let fake: FakeReranker;
beforeAll(async () => {
  fake = await startFakeReranker();
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => fake.reset());

const DOCUMENTS = ['Budget review and travel expenses.', 'Tomatoes need watering twice a week.', 'Watering tomatoes in the morning.'];
const QUERY = 'watering tomatoes morning';

const configFor = (shape: RerankShape, model: string, extra: Partial<RerankConfig> = {}): RerankConfig => ({
  RERANK_MODEL: `${shape}:${model}`,
  RERANK_BASE_URL: fake.baseUrl(shape),
  RERANK_API_KEY: undefined,
  COHERE_API_KEY: undefined,
  JINA_API_KEY: undefined,
  VOYAGE_API_KEY: undefined,
  ...extra,
});

describe('reranker API shapes', () => {
  it('is off when RERANK_MODEL is unset', () => {
    expect(createReranker({ ...configFor('cohere', 'x'), RERANK_MODEL: undefined })).toBeNull();
  });

  const cases: Array<{ shape: RerankShape; model: string; key: Partial<RerankConfig>; path: string; body: Record<string, unknown> }> = [
    {
      shape: 'cohere',
      model: 'rerank-v3.5',
      key: { COHERE_API_KEY: 'co-key' },
      path: '/cohere/v2/rerank',
      body: { model: 'rerank-v3.5', query: QUERY, documents: DOCUMENTS, top_n: 3 },
    },
    {
      shape: 'jina',
      model: 'jina-reranker-v2-base-multilingual',
      key: { JINA_API_KEY: 'jina-key' },
      path: '/jina/v1/rerank',
      body: { model: 'jina-reranker-v2-base-multilingual', query: QUERY, documents: DOCUMENTS, top_n: 3, return_documents: false },
    },
    {
      shape: 'voyage',
      model: 'rerank-2',
      key: { VOYAGE_API_KEY: 'voyage-key' },
      path: '/voyage/v1/rerank',
      body: { model: 'rerank-2', query: QUERY, documents: DOCUMENTS, top_k: 3, return_documents: false },
    },
    {
      shape: 'vllm',
      model: 'BAAI/bge-reranker-v2-m3',
      key: { RERANK_API_KEY: 'vllm-key' },
      path: '/vllm/v1/rerank',
      body: { model: 'BAAI/bge-reranker-v2-m3', query: QUERY, documents: DOCUMENTS, top_n: 3 },
    },
    {
      shape: 'tei',
      model: 'BAAI/bge-reranker-base',
      key: { RERANK_API_KEY: 'tei-key' },
      path: '/tei/rerank',
      body: { query: QUERY, texts: DOCUMENTS, raw_scores: false, truncate: true },
    },
  ];

  for (const c of cases) {
    it(`${c.shape}: sends its request shape with the key and reads the scores back in document order`, async () => {
      const reranker = createReranker(configFor(c.shape, c.model, c.key))!;
      expect(reranker).toMatchObject({ provider: c.shape, model: c.model });
      const scores = await reranker.rerank(QUERY, DOCUMENTS);
      // The fake answers sorted by score; the port puts them back in the documents' order.
      expect(scores).toEqual([0, 2 / 3, 1]);
      expect(fake.requests).toHaveLength(1);
      const [request] = fake.requests;
      expect(request!.path).toBe(c.path);
      expect(request!.body).toEqual(c.body);
      expect(request!.headers.authorization).toBe(`Bearer ${Object.values(c.key)[0]}`);
    });
  }

  it('sends no authorization header without a key', async () => {
    await createReranker(configFor('tei', 'm'))!.rerank(QUERY, DOCUMENTS);
    expect(fake.requests[0]!.headers.authorization).toBeUndefined();
  });
});

describe('reranker failures', () => {
  it('throws on an HTTP error', async () => {
    fake.fail = 'status';
    await expect(createReranker(configFor('cohere', 'm'))!.rerank(QUERY, DOCUMENTS)).rejects.toThrow(new RerankError('rerank answered HTTP 500'));
  });

  it('throws on a malformed answer', async () => {
    fake.fail = 'malformed';
    await expect(createReranker(configFor('jina', 'm'))!.rerank(QUERY, DOCUMENTS)).rejects.toThrow('malformed rerank answer');
  });

  it('gives up after the timeout', async () => {
    fake.fail = 'hang';
    const started = Date.now();
    const error = await createReranker(configFor('vllm', 'm'), { timeoutMs: 200 })!
      .rerank(QUERY, DOCUMENTS)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RerankError);
    expect(error).toMatchObject({ timedOut: true, message: 'no rerank answer within 200 ms' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('throws when the service cannot be reached', async () => {
    const reranker = createReranker({ ...configFor('cohere', 'm'), RERANK_BASE_URL: 'http://127.0.0.1:1' })!;
    await expect(reranker.rerank(QUERY, DOCUMENTS)).rejects.toThrow(/rerank request failed/);
  });
});

describe('applyRerank', () => {
  it('orders by score, keeps the previous order on ties, puts unscored hits last and adds rerank_score', () => {
    const hits = ['a', 'b', 'c', 'd'].map((id) => ({ id, score: 1 }));
    expect(applyRerank(hits, [0.2, undefined, 0.9, 0.2])).toEqual([
      { id: 'c', score: 1, rerank_score: 0.9 },
      { id: 'a', score: 1, rerank_score: 0.2 },
      { id: 'd', score: 1, rerank_score: 0.2 },
      { id: 'b', score: 1 },
    ]);
  });
});
