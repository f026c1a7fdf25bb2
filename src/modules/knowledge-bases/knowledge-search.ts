import type { Logger } from 'pino';
import { type DbOrTx, queryRows } from '../../db/client.js';
import { type SQL, sql } from 'drizzle-orm';
import type { KnowledgeHit, KnowledgeSearch } from '../agents/index.js';
import { KNOWN_CONFIGS, type PageUnit, segmentCjk } from '../documents/index.js';
import { type EmbeddingsService, type Generation, indexedVectorType } from '../embeddings/index.js';
import { chatHasKnowledge } from './knowledge-bases.repo.js';
import { accessTags, type CacheRegion } from '../../platform/cache/shared-cache.js';
import { type ServiceMetrics, timeModelCall } from '../../platform/metrics.js';
import { applyRerank, type Reranker } from './reranker.js';

/** Candidates each retriever contributes before fusion. */
const CANDIDATES = 30;
/** The usual reciprocal-rank-fusion constant: ranks beyond the first few weigh little. */
const RRF_K = 60;
/** Fused candidates sent to the reranker: three times the results wanted, at most this many. */
const RERANK_POOL = 50;

interface Candidate {
  id: string;
  document_id: string;
  document_name: string;
  content: string;
  page: number | null;
  /** What `page` counts (the document's `page_unit`, stored at ingestion from the format read). */
  page_unit?: PageUnit | null;
}

/** The documents in the knowledge bases attached to a chat (the one scope rule of both searches). */
const chatDocumentIds = (chatId: string) => sql`
    SELECT kd.document_id FROM knowledge_base_documents kd
    JOIN chat_knowledge_bases ck ON ck.knowledge_base_id = kd.knowledge_base_id
    WHERE ck.session_id = ${chatId}`;

/** Rows each tier of the lexical search reads before ranking (see lexicalCandidates). */
export const LEXICAL_POOL = 100;
/** Longest query read, in characters, and most terms taken from it: a question, not a document. */
const MAX_QUERY_CHARS = 1000;
const MAX_TERMS = 32;

/** A search query in the syntax the lexical search understands (parseSearchQuery). */
export interface ParsedQuery {
  /** Plain words: any of them may match (OR), rows with all of them are preferred. */
  words: string[];
  /** `word*`: lexemes starting with the word (letters and digits only). */
  prefixes: string[];
  /** `"several words"`: required, in this order, next to each other. */
  phrases: string[];
  /** `-word`: rows containing it are left out. */
  excluded: string[];
}

const PREFIX_WORD = /^[\p{L}\p{N}]+$/u;
const HAS_WORD = /[\p{L}\p{N}]/u;

/**
 * Splits a query into plain words, `word*` prefixes, `"quoted phrases"` and `-excluded` words
 * (websearch syntax, with plain words OR-ed instead of AND-ed so a natural question still matches
 * partial overlaps; the word `or` is dropped as they are OR-ed anyway). CJK runs are segmented
 * into words first, as chunks are at indexing. Never throws; every part reaches SQL only as a
 * parameter of a PostgreSQL parsing function, so no input is syntax.
 */
export function parseSearchQuery(query: string): ParsedQuery {
  const parsed: ParsedQuery = { words: [], prefixes: [], phrases: [], excluded: [] };
  let count = 0;
  const add = (list: string[], value: string) => {
    if (count < MAX_TERMS && HAS_WORD.test(value)) {
      list.push(value);
      count += 1;
    }
  };
  // PostgreSQL text cannot hold NUL; other control characters are separators anyway.
  const text = query.slice(0, MAX_QUERY_CHARS).replace(/\p{Cc}/gu, ' ');
  const rest = text.replace(/"([^"]*)"/g, (_, phrase: string) => {
    add(parsed.phrases, segmentCjk(phrase) ?? phrase);
    return ' ';
  });
  for (const raw of rest.replaceAll('"', ' ').split(/\s+/)) {
    if (!raw || raw.toLowerCase() === 'or') continue;
    if (raw.startsWith('-') && raw.length > 1) {
      add(parsed.excluded, segmentCjk(raw.slice(1)) ?? raw.slice(1));
      continue;
    }
    const stem = raw.replace(/\*+$/, '');
    if (stem !== raw && PREFIX_WORD.test(stem)) {
      add(parsed.prefixes, stem);
      continue;
    }
    // A run of CJK text is a sentence: each of its words is a plain word of its own.
    for (const word of (segmentCjk(stem) ?? stem).split(' ')) add(parsed.words, word);
  }
  return parsed;
}

/**
 * The tsquery of a parsed query in the configuration `config` (an SQL expression of type
 * regconfig): `loose` requires one of the words or prefixes; `strict` requires all of them; both
 * require the phrases and exclude the excluded words. Only PostgreSQL's own parsing functions see
 * the user's text (plainto/phraseto_tsquery never fail on any input; prefixes are letters and
 * digits only, so `to_tsquery(word || ':*')` cannot be more than one prefix term).
 */
function tsqueries(parsed: ParsedQuery, config: SQL) {
  const join = (parts: SQL[], op: SQL) => (parts.length ? sql.join(parts, op) : null);
  const terms = [
    ...parsed.words.map((w) => sql`plainto_tsquery(${config}, ${w})`),
    ...parsed.prefixes.map((p) => sql`to_tsquery(${config}, ${p} || ':*')`),
  ];
  const required = [
    ...parsed.phrases.map((p) => sql`phraseto_tsquery(${config}, ${p})`),
    ...parsed.excluded.map((w) => sql`(!! plainto_tsquery(${config}, ${w}))`),
  ];
  const all = join(required, sql` && `);
  const combine = (any: SQL | null) => (any && all ? sql`(${any}) && (${all})` : (any ?? all ?? sql`''::tsquery`));
  return { loose: combine(join(terms, sql` || `)), strict: combine(join(terms, sql` && `)) };
}

/**
 * Full-text candidates over the chat's knowledge bases, in every text-search configuration
 * among their documents (each document's chunks only with its own configuration's query).
 *
 * Two statements. The first lists the chat's ready documents per configuration and renders the
 * query in each configuration as tsquery text (PostgreSQL parses and stems it). The second passes
 * those back as constants (so the planner sees the real query and document list) and ranks a
 * bounded candidate set: per configuration at most LEXICAL_POOL rows matching all terms plus at
 * most LEXICAL_POOL rows matching any, taken by the GIN index (or the document index when the
 * chat's documents are few) without ordering, then ordered by ts_rank_cd. Ranking every match
 * of an OR-ed question meant tens of thousands of rows at 100,000 chunks (bench/RESULTS.md).
 */
export async function lexicalCandidates(db: DbOrTx, chatId: string, query: string, limit = CANDIDATES) {
  const statement = await lexicalStatement(db, chatId, query, limit);
  return statement ? queryRows<Candidate & { rank: number }>(db, statement) : [];
}

/** The ranking statement of lexicalCandidates (after its first statement ran); null when nothing can match. */
export async function lexicalStatement(db: DbOrTx, chatId: string, query: string, limit = CANDIDATES): Promise<SQL | null> {
  const parsed = parseSearchQuery(query);
  // A query of exclusions alone would match nearly everything: it finds nothing.
  if (parsed.words.length + parsed.prefixes.length + parsed.phrases.length === 0) return null;
  const { loose, strict } = tsqueries(parsed, sql`d.search_config::regconfig`);
  const scopes = await queryRows<{ ids: string; loose: string; strict: string }>(
    db,
    sql`SELECT array_agg(d.id)::text AS ids, (${loose})::text AS loose, (${strict})::text AS strict
        FROM documents d
        WHERE d.processing_status = 'ready' AND d.search_config IN ${[...KNOWN_CONFIGS]}
          AND d.id IN (${chatDocumentIds(chatId)})
        GROUP BY d.search_config`,
  );
  const branches = scopes
    .filter((s) => s.loose !== '')
    .map(
      (s) => {
        const pool = (tsquery: string) =>
          sql`(SELECT c.id FROM document_chunks c WHERE c.document_id = ANY(${s.ids}::uuid[]) AND c.tsv @@ ${tsquery}::tsquery LIMIT ${LEXICAL_POOL})`;
        // One term: "all of them" is "any of them", one pool read.
        const pools = s.strict === s.loose ? pool(s.loose) : sql`${pool(s.strict)} UNION ${pool(s.loose)}`;
        return sql`(SELECT c.id, ts_rank_cd(c.tsv, ${s.loose}::tsquery) AS rank
        FROM (${pools}) pool JOIN document_chunks c ON c.id = pool.id)`;
      },
    );
  if (branches.length === 0) return null;
  return sql`SELECT c.id, c.document_id, d.name AS document_name, c.content, c.page, d.page_unit, ranked.rank
        FROM (${sql.join(branches, sql` UNION ALL `)}) ranked
        JOIN document_chunks c ON c.id = ranked.id JOIN documents d ON d.id = c.document_id
        ORDER BY ranked.rank DESC, c.id
        LIMIT ${limit}`;
}

/**
 * Scopes of at most this many chunks (a chat whose knowledge bases are a small part of the
 * index) are ranked exactly, every vector compared; larger ones through the generation's HNSW
 * index with an iterative scan. Chosen by measurement (bench/RESULTS.md, issue 15): the exact
 * ranking costs ~7.5 µs per vector (800: 7 ms p50), so 4,000 stay within the 30 ms search budget
 * and are never wrong, while an iterative scan for a scope of 1 % of the index took 90 ms p50 and
 * recall@10 0.93 (2,800 of 300,000 chunks).
 */
export const EXACT_SCAN_MAX = 4000;

/**
 * Nearest chunks by cosine distance in one generation's vectors, among the chat's ready documents;
 * one statement. The chat's documents are read once (an InitPlan), then one of two branches runs,
 * by a bounded count of the scope's vectors: the exact one (ORDER BY the full-precision distance,
 * which no index provides, over the document index) or the approximate one (ORDER BY the
 * generation's index expression, `embedding::halfvec(n) <=> query` (or `vector(n)`, embeddings' indexedVectorType), with the document filter
 * (written so that no btree index can serve it, else the planner prefers it) applied during the
 * scan: the connection's `hnsw.iterative_scan = relaxed_order` keeps scanning
 * until enough rows pass it; db/client.ts). When the index scan still comes back short (hundreds
 * of identical vectors outside the scope next to the query wall the graph off), the exact ranking
 * runs instead: slower, never short. The approximate order is re-sorted by the
 * full-precision distance. Any other ORDER BY, or a tie-breaker, stops PostgreSQL from using the
 * index (bench/RESULTS.md shows the plans).
 */
export async function vectorCandidates(db: DbOrTx, chatId: string, generation: Generation, vector: number[], limit = CANDIDATES) {
  return withVectorPlan(db, generation, (on) => queryRows<Candidate & { distance: number }>(on, vectorStatement(chatId, generation, vector, limit)));
}

/**
 * Runs `run` (vectorStatement) as the planner must see it. On a full-precision index (the
 * embedded profile) the planner prices a 1,536-dimension distance like a cheap operator and
 * prefers ranking 20,000 rows by a scan and a sort (500 ms on PGlite) to the index (a few ms);
 * the cast a halfvec index needs tips it the right way on PostgreSQL. So sorting is disabled for
 * that statement: of the approximate branch's plans only the index scan needs no sort, and the
 * other branches have no plan without one. A transaction costs no round trip on PGlite.
 */
export async function withVectorPlan<T>(db: DbOrTx, generation: Generation, run: (db: DbOrTx) => Promise<T>): Promise<T> {
  if (generation.indexStorage !== 'vector') return run(db);
  return db.transaction(async (tx) => {
    await tx.execute(sql`SET LOCAL enable_sort = off`);
    return run(tx);
  });
}

/** The statement of vectorCandidates (the benchmark EXPLAINs it). */
export function vectorStatement(chatId: string, generation: Generation, vector: number[], limit = CANDIDATES): SQL {
  const literal = `[${vector.join(',')}]`;
  // Integers of our own (a generation row); literal so the planner matches the partial index.
  const id = sql.raw(String(Math.trunc(generation.id)));
  const indexed = sql.raw(indexedVectorType(generation));
  const scope = sql`e.generation = ${id} AND e.document_id = ANY((SELECT ids FROM docs)::uuid[])`;
  return sql`WITH query AS MATERIALIZED (SELECT ${literal}::vector AS v),
        docs AS MATERIALIZED (
          SELECT coalesce(array_agg(d.id), '{}') AS ids FROM documents d
          WHERE d.processing_status = 'ready' AND d.id IN (${chatDocumentIds(chatId)})),
        scoped AS MATERIALIZED (
          SELECT count(*) AS n FROM (SELECT 1 FROM chunk_embeddings e WHERE ${scope} LIMIT ${EXACT_SCAN_MAX + 1}) s),
        approximate AS MATERIALIZED (
          SELECT e.chunk_id, e.embedding <=> (SELECT v FROM query) AS distance FROM chunk_embeddings e
          WHERE (SELECT n FROM scoped) > ${EXACT_SCAN_MAX} AND e.generation = ${id}
            -- Compared as text so no btree index matches: the planner would take the document
            -- index and rank every vector in scope (4 s at 100,000; bench/RESULTS.md).
            AND e.document_id::text = ANY((SELECT ids FROM docs)::text[])
          ORDER BY e.embedding::${indexed} <=> (SELECT v::${indexed} FROM query) LIMIT ${limit}),
        hits AS (
          -- Exact for a small scope, and the safety net of a large one whose index scan came back
          -- short (many identical vectors outside the scope can wall the graph off; tested).
          (SELECT e.chunk_id, e.embedding <=> (SELECT v FROM query) AS distance FROM chunk_embeddings e
           WHERE ((SELECT n FROM scoped) <= ${EXACT_SCAN_MAX} OR (SELECT count(*) FROM approximate) < ${limit}) AND ${scope}
           ORDER BY distance LIMIT ${limit})
          UNION ALL
          (SELECT * FROM approximate WHERE (SELECT count(*) FROM approximate) >= ${limit}))
        SELECT c.id, c.document_id, d.name AS document_name, c.content, c.page, d.page_unit, hits.distance
        FROM hits JOIN document_chunks c ON c.id = hits.chunk_id JOIN documents d ON d.id = c.document_id
        ORDER BY hits.distance, c.id`;
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
      // Named only where there is a page to count.
      ...(candidate.page != null ? { page_unit: candidate.page_unit ?? 'page' } : {}),
      score: Math.round(score * 1e6) / 1e6,
    }));
}

/**
 * Hybrid retrieval for the agent's `search_knowledge_base` tool: full-text rank plus vector
 * similarity (when EMBEDDING_MODEL is set and the workspace has credit for the query embedding),
 * fused by reciprocal rank; lexical only otherwise. With a reranker (RERANK_MODEL), the fused
 * candidates (3× the limit, at most RERANK_POOL) are reordered by its scores; when it fails the
 * fused order stands (a warning is logged). Reranking is not metered (no catalog price).
 */
export function createKnowledgeSearch(deps: {
  db: DbOrTx;
  embeddings: Pick<EmbeddingsService, 'queryVector'>;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'modelCall'>;
  reranker?: Reranker | null;
  /**
   * Whether a chat has knowledge attached, cached per chat and dropped with the workspace's
   * links (accessTags.chatKnowledge: attach, detach, a knowledge base deleted; src/deps.ts).
   * Without it every turn reads it (one statement).
   */
  knowledgeCache?: CacheRegion<boolean>;
}): KnowledgeSearch {
  const { db, embeddings, log, metrics, reranker, knowledgeCache } = deps;

  async function rerank(query: string, hits: KnowledgeHit[]): Promise<KnowledgeHit[]> {
    if (!reranker || hits.length === 0) return hits;
    const record = timeModelCall(metrics, { kind: 'rerank', provider: reranker.provider, model: reranker.model });
    try {
      const scores = await reranker.rerank(query, hits.map((hit) => hit.content));
      record('ok');
      return applyRerank(hits, scores);
    } catch (error) {
      record(error instanceof Error && 'timedOut' in error && error.timedOut ? 'timeout' : 'error');
      // The fused order is still a good answer: reranking only sharpens it.
      log.warn({ err: error, provider: reranker.provider, model: reranker.model }, 'reranking failed; keeping the fused order');
      return hits;
    }
  }

  return {
    async hasKnowledge(chat) {
      if (!knowledgeCache) return chatHasKnowledge(db, chat.id);
      const found = await knowledgeCache.through(chat.id.toLowerCase(), async () => ({
        value: await chatHasKnowledge(db, chat.id),
        tags: [accessTags.chatKnowledge(chat.workspaceId)],
      }));
      return found === true;
    },
    async search({ workspaceId, chatId, query, limit }) {
      const [lexical, vector] = await Promise.all([
        lexicalCandidates(db, chatId, query),
        embeddings.queryVector(workspaceId, query).then((q) => (q ? vectorCandidates(db, chatId, q.generation, q.vector) : [])),
      ]);
      if (!reranker) return fuse([lexical, vector], limit);
      const pool = Math.max(limit, Math.min(limit * 3, RERANK_POOL));
      return (await rerank(query, fuse([lexical, vector], pool))).slice(0, limit);
    },
  };
}
