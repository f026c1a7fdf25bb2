import { randomUUID } from 'node:crypto';
import { embed } from 'ai';
import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import { type DbOrTx, queryRows } from '../../db/client.js';
import { sql } from 'drizzle-orm';
import type { KnowledgeHit, KnowledgeSearch } from '../agents/index.js';
import type { CreditService } from '../billing/index.js';
import { EMBEDDING_DIMENSIONS } from '../documents/index.js';
import type { ModelRegistry } from '../models/index.js';
import { chatHasKnowledge } from './knowledge-bases.repo.js';
import { type ServiceMetrics, timeModelCall } from '../../platform/metrics.js';

/** Candidates each retriever contributes before fusion. */
const CANDIDATES = 30;
/** The usual reciprocal-rank-fusion constant: ranks beyond the first few weigh little. */
const RRF_K = 60;

interface Candidate {
  id: string;
  document_id: string;
  document_name: string;
  content: string;
  page: number | null;
}

/** Chunks of ready documents in the knowledge bases attached to a chat. */
const chatChunks = (chatId: string) => sql`
  c.document_id IN (
    SELECT kd.document_id FROM knowledge_base_documents kd
    JOIN chat_knowledge_bases ck ON ck.knowledge_base_id = kd.knowledge_base_id
    WHERE ck.session_id = ${chatId}
  ) AND d.processing_status = 'ready'`;

/** Full-text candidates; words are OR-ed so a natural question still matches partial overlaps. */
export async function lexicalCandidates(db: DbOrTx, chatId: string, query: string, limit = CANDIDATES) {
  return queryRows<Candidate & { rank: number }>(
    db,
    sql`WITH q AS (SELECT NULLIF(replace(plainto_tsquery('english', ${query})::text, '&', '|'), '')::tsquery AS tsq)
        SELECT c.id, c.document_id, d.name AS document_name, c.content, c.page, ts_rank_cd(c.tsv, q.tsq) AS rank
        FROM document_chunks c JOIN documents d ON d.id = c.document_id, q
        WHERE q.tsq IS NOT NULL AND c.tsv @@ q.tsq AND ${chatChunks(chatId)}
        ORDER BY rank DESC, c.id
        LIMIT ${limit}`,
  );
}

/** Nearest chunks by cosine distance. The ORDER BY must be the bare distance: any tie-breaker
 * column stops PostgreSQL from using the HNSW index (bench/RESULTS.md shows both plans). */
export async function vectorCandidates(db: DbOrTx, chatId: string, vector: number[], limit = CANDIDATES) {
  const literal = `[${vector.join(',')}]`;
  return queryRows<Candidate & { distance: number }>(
    db,
    sql`SELECT c.id, c.document_id, d.name AS document_name, c.content, c.page, c.embedding <=> ${literal}::vector AS distance
        FROM document_chunks c JOIN documents d ON d.id = c.document_id
        WHERE c.embedding IS NOT NULL AND ${chatChunks(chatId)}
        ORDER BY c.embedding <=> ${literal}::vector
        LIMIT ${limit}`,
  );
}

/** Reciprocal-rank fusion of ranked lists: score = Σ 1 / (k + rank). */
export function fuse(lists: Candidate[][], limit: number): KnowledgeHit[] {
  const scores = new Map<string, { candidate: Candidate; score: number }>();
  for (const list of lists) {
    list.forEach((candidate, index) => {
      const entry = scores.get(candidate.id) ?? { candidate, score: 0 };
      entry.score += 1 / (RRF_K + index + 1);
      scores.set(candidate.id, entry);
    });
  }
  return [...scores.values()]
    .sort((a, b) => b.score - a.score || a.candidate.id.localeCompare(b.candidate.id))
    .slice(0, limit)
    .map(({ candidate, score }) => ({
      chunk_id: candidate.id,
      document_id: candidate.document_id,
      document_name: candidate.document_name,
      content: candidate.content,
      page: candidate.page,
      score: Math.round(score * 1e6) / 1e6,
    }));
}

/**
 * Hybrid retrieval for the agent's `search_knowledge_base` tool: full-text rank plus vector
 * similarity (when EMBEDDING_MODEL is set and the workspace has credit for the query embedding),
 * fused by reciprocal rank; lexical only otherwise.
 */
export function createKnowledgeSearch(deps: {
  db: DbOrTx;
  config: Pick<Config, 'EMBEDDING_MODEL'>;
  credit: CreditService;
  modelRegistry: ModelRegistry;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'modelCall'>;
}): KnowledgeSearch {
  const { db, config, credit, modelRegistry, log, metrics } = deps;

  async function queryVector(workspaceId: string, query: string): Promise<number[] | null> {
    if (!config.EMBEDDING_MODEL) return null;
    try {
      const { model, entry } = modelRegistry.embeddingModel(config.EMBEDDING_MODEL);
      const reservation = await credit.admit({ workspace: workspaceId, estimate: (query.length / 4) * (entry.input_price_per_million / 1e6) });
      const record = timeModelCall(metrics, { kind: 'embedding', provider: entry.provider, model: entry.id });
      const result = await embed({
        model,
        value: query,
        maxRetries: 1,
        providerOptions: {
          openai: { dimensions: EMBEDDING_DIMENSIONS },
          openaiCompatible: { dimensions: EMBEDDING_DIMENSIONS },
          google: { outputDimensionality: EMBEDDING_DIMENSIONS },
        },
      }).catch(async (error: unknown) => {
        record('error');
        await credit.release(reservation);
        throw error;
      });
      const usage = { kind: 'embedding' as const, model: entry.id, inputTokens: result.usage.tokens, referenceId: `search:${randomUUID()}` };
      record('ok', { inputTokens: usage.inputTokens, costUsd: credit.costOf(usage) });
      await credit.settle(reservation, usage);
      return result.embedding.length === EMBEDDING_DIMENSIONS ? result.embedding : null;
    } catch (error) {
      // Search still answers from full text: a missing vector only lowers recall.
      log.warn({ err: error }, 'query embedding failed; searching full text only');
      return null;
    }
  }

  return {
    hasKnowledge: (chatId) => chatHasKnowledge(db, chatId),
    async search({ workspaceId, chatId, query, limit }) {
      const [lexical, vector] = await Promise.all([
        lexicalCandidates(db, chatId, query),
        queryVector(workspaceId, query).then((v) => (v ? vectorCandidates(db, chatId, v) : [])),
      ]);
      return fuse([lexical, vector], limit);
    },
  };
}
