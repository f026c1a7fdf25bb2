import { z } from 'zod';
import type { Config } from '../../config/env.js';

/*
 * The reranker port: scores each candidate passage against the query with a cross-encoder behind
 * one of four HTTP API shapes. RERANK_MODEL is `provider:model`:
 *
 * - `cohere`: Cohere v2 `POST /v2/rerank` {model, query, documents, top_n} → {results: [{index, relevance_score}]}
 * - `jina`: Jina `POST /v1/rerank`, same request and answer (plus return_documents: false)
 * - `voyage`: Voyage `POST /v1/rerank` {model, query, documents, top_k} → {data: [{index, relevance_score}]}
 * - `vllm`: vLLM's Jina/Cohere-compatible `POST /rerank` (RERANK_BASE_URL, e.g. http://vllm:8000/v1)
 * - `tei`: Hugging Face Text Embeddings Inference `POST /rerank` {query, texts} → [{index, score}]
 *
 * Plain fetch, no SDK: the installed AI SDK has `rerank()` but no installed provider package
 * offers a reranking model, and these APIs are one small JSON request each.
 */

export type RerankProvider = 'cohere' | 'jina' | 'voyage' | 'vllm' | 'tei';

export type RerankConfig = Pick<
  Config,
  'RERANK_MODEL' | 'RERANK_BASE_URL' | 'RERANK_API_KEY' | 'COHERE_API_KEY' | 'JINA_API_KEY' | 'VOYAGE_API_KEY'
>;

export interface Reranker {
  provider: RerankProvider;
  model: string;
  /**
   * One relevance score per document, in the documents' order (undefined for a document the
   * service left out). Throws RerankError on an HTTP error, a timeout or a malformed answer.
   */
  rerank(query: string, documents: string[]): Promise<Array<number | undefined>>;
}

export class RerankError extends Error {
  constructor(
    message: string,
    readonly timedOut = false,
  ) {
    super(message);
    this.name = 'RerankError';
  }
}

/** A reranker that has not answered in this long is given up on (search keeps the fused order). */
export const RERANK_TIMEOUT_MS = 5000;

const defaultBaseUrls: Partial<Record<RerankProvider, string>> = {
  cohere: 'https://api.cohere.com/v2',
  jina: 'https://api.jina.ai/v1',
  voyage: 'https://api.voyageai.com/v1',
};

const relevance = z.object({ index: z.number().int().min(0), relevance_score: z.number() });
const answers = {
  results: z.object({ results: z.array(relevance) }),
  data: z.object({ data: z.array(relevance) }),
  tei: z.array(z.object({ index: z.number().int().min(0), score: z.number() })),
};

function requestOf(provider: RerankProvider, model: string, query: string, documents: string[]) {
  switch (provider) {
    case 'cohere':
    case 'vllm':
      return { model, query, documents, top_n: documents.length };
    case 'jina':
      return { model, query, documents, top_n: documents.length, return_documents: false };
    case 'voyage':
      return { model, query, documents, top_k: documents.length, return_documents: false };
    case 'tei':
      return { query, texts: documents, raw_scores: false, truncate: true };
  }
}

function scoresOf(provider: RerankProvider, body: unknown, count: number): Array<number | undefined> {
  let pairs: Array<{ index: number; score: number }>;
  if (provider === 'tei') {
    const parsed = answers.tei.safeParse(body);
    if (!parsed.success) throw new RerankError('malformed rerank answer');
    pairs = parsed.data;
  } else {
    const parsed = provider === 'voyage' ? answers.data.safeParse(body) : answers.results.safeParse(body);
    if (!parsed.success) throw new RerankError('malformed rerank answer');
    const list = 'data' in parsed.data ? parsed.data.data : parsed.data.results;
    pairs = list.map((r) => ({ index: r.index, score: r.relevance_score }));
  }
  const scores: Array<number | undefined> = new Array<number | undefined>(count).fill(undefined);
  for (const { index, score } of pairs) {
    if (index >= count || !Number.isFinite(score)) throw new RerankError('malformed rerank answer');
    scores[index] = score;
  }
  return scores;
}

/** The configured reranker, or null when RERANK_MODEL is unset. */
export function createReranker(config: RerankConfig, options: { timeoutMs?: number } = {}): Reranker | null {
  if (!config.RERANK_MODEL) return null;
  const split = config.RERANK_MODEL.indexOf(':');
  const provider = config.RERANK_MODEL.slice(0, split) as RerankProvider;
  const model = config.RERANK_MODEL.slice(split + 1);
  const base = (config.RERANK_BASE_URL ?? defaultBaseUrls[provider] ?? '').replace(/\/+$/, '');
  const key = { cohere: config.COHERE_API_KEY, jina: config.JINA_API_KEY, voyage: config.VOYAGE_API_KEY, vllm: config.RERANK_API_KEY, tei: config.RERANK_API_KEY }[
    provider
  ];
  const timeoutMs = options.timeoutMs ?? RERANK_TIMEOUT_MS;

  return {
    provider,
    model,
    async rerank(query, documents) {
      if (documents.length === 0) return [];
      let response: Response;
      let body: unknown;
      try {
        response = await fetch(`${base}/rerank`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
          body: JSON.stringify(requestOf(provider, model, query, documents)),
          signal: AbortSignal.timeout(timeoutMs),
        });
        body = response.ok ? await response.json() : await response.text();
      } catch (error) {
        const timedOut = (error as Error).name === 'TimeoutError';
        throw new RerankError(timedOut ? `no rerank answer within ${timeoutMs} ms` : `rerank request failed: ${(error as Error).message}`, timedOut);
      }
      if (!response.ok) throw new RerankError(`rerank answered HTTP ${response.status}`);
      return scoresOf(provider, body, documents.length);
    },
  };
}

/**
 * `hits` ordered by the reranker's scores (highest first; ties and unscored hits keep their
 * previous order, unscored after scored), each with its `rerank_score`.
 */
export function applyRerank<T extends object>(hits: T[], scores: Array<number | undefined>): Array<T & { rerank_score?: number }> {
  return hits
    .map((hit, index) => ({ hit, index, score: scores[index] }))
    .sort((a, b) => {
      if (a.score === undefined || b.score === undefined) return (a.score === undefined ? 1 : 0) - (b.score === undefined ? 1 : 0) || a.index - b.index;
      return b.score - a.score || a.index - b.index;
    })
    .map(({ hit, score }) => (score === undefined ? hit : { ...hit, rerank_score: Math.round(score * 1e6) / 1e6 }));
}
