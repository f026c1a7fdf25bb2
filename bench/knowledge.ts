/**
 * Knowledge benchmark on PostgreSQL + pgvector: (a) ingestion throughput (extract + chunk + store
 * through the real upload → confirm → queue path, no embedding calls) and (b) hybrid search
 * latency over 100,000 chunks, with EXPLAIN (ANALYZE) evidence of the GIN and HNSW indexes.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:knowledge \
 *     [-- --chunks 100000 --searches 200 --pdf-docs 4 --pages 200 --no-record]
 *
 * DATABASE_URL names the server only: the benchmark creates `wsai_bench_knowledge_<random>` on
 * it, migrates it through createDeps, and drops it at the end. The app runs in this process
 * (logging silent, in-process job queue as in the embedded profile, EMBEDDING_MODEL unset) on
 * 127.0.0.1, with a fake model server (test/support) for the one path that embeds the query.
 *
 * (a) Generated documents with ~3,000 characters of English-like text per page (common English
 *     words, ~4.1 characters per token): PDFs built here (one page per PDF page) and plain-text
 *     files (a "page" is 3,000 characters). Each is uploaded through `POST .../documents/upload/` +
 *     the signed PUT, then all are confirmed at once; the clock runs from the first confirm until
 *     every document is `ready` (the queue drained).
 * (b) N chunk rows (prose over a 30,400-word vocabulary with Zipf frequencies; deterministic
 *     pseudo-random unit vectors in 1,000 topic clusters, made in SQL from a per-row seed) in
 *     documents of a knowledge base attached to a chat, inserted with batched
 *     `INSERT ... SELECT FROM unnest(...)` while the GIN and HNSW indexes are dropped, then both
 *     indexes are rebuilt (timed). A second chat's knowledge base holds 1% of the same documents
 *     (the lexical search is also timed there). Searches call the
 *     service's own `lexicalCandidates`, `vectorCandidates` and `fuse`, and `createKnowledgeSearch`
 *     with EMBEDDING_MODEL pointed at the fake server; EXPLAIN (ANALYZE) shows the indexes used.
 * Results are printed and appended to bench/RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { type SQL, sql } from 'drizzle-orm';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/env.js';
import type { DbOrTx } from '../src/db/client.js';
import { createDeps } from '../src/deps.js';
import { chunkDocument } from '../src/modules/ingestion/chunk.js';
import { extractText } from '../src/modules/ingestion/extract/index.js';
import { createKnowledgeSearch, fuse, lexicalCandidates, lexicalStatement, vectorCandidates } from '../src/modules/knowledge-bases/knowledge-search.js';
import { createLogger } from '../src/platform/logger.js';
import { startFakeModelServer } from '../test/support/fake-model-server.js';
import { buildPdf, COMMON, COMMON_WORDS, LARGE, prng, prose, wrap } from './corpus.js';
import { appendResults, ascending, createBenchDatabase, fmt, loadAverage, machine, machineLine, percentile, positiveInt } from './support.js';

const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: process.env.BENCH_CHUNKS ?? '100000' },
    'chunks-per-doc': { type: 'string', default: process.env.BENCH_CHUNKS_PER_DOC ?? '400' },
    searches: { type: 'string', default: process.env.BENCH_SEARCHES ?? '200' },
    'path-seconds': { type: 'string', default: process.env.BENCH_PATH_SECONDS ?? '75' },
    'search-warmup': { type: 'string', default: process.env.BENCH_SEARCH_WARMUP ?? '20' },
    recall: { type: 'string', default: process.env.BENCH_RECALL_QUERIES ?? '10' },
    'pdf-docs': { type: 'string', default: process.env.BENCH_PDF_DOCS ?? '4' },
    'text-docs': { type: 'string', default: process.env.BENCH_TEXT_DOCS ?? '4' },
    pages: { type: 'string', default: process.env.BENCH_PAGES ?? '200' },
    'maintenance-work-mem': { type: 'string', default: process.env.BENCH_MAINTENANCE_WORK_MEM ?? '1GB' },
    'build-timeout': { type: 'string', default: process.env.BENCH_BUILD_TIMEOUT_SECONDS ?? '900' },
    'skip-ingestion': { type: 'boolean', default: false },
    'skip-search': { type: 'boolean', default: false },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
  allowPositionals: false,
});

const totalChunks = positiveInt('chunks', args.chunks);
const chunksPerDoc = positiveInt('chunks-per-doc', args['chunks-per-doc']);
const searches = positiveInt('searches', args.searches);
const searchWarmup = positiveInt('search-warmup', args['search-warmup'], 0);
const pathSeconds = positiveInt('path-seconds', args['path-seconds']);
const recallQueries = positiveInt('recall', args.recall, 0);
const pdfDocs = positiveInt('pdf-docs', args['pdf-docs'], 0);
const textDocs = positiveInt('text-docs', args['text-docs'], 0);
const pagesPerDoc = positiveInt('pages', args.pages);
const buildTimeoutSeconds = positiveInt('build-timeout', args['build-timeout']);
const maintenanceWorkMem = args['maintenance-work-mem'];
if (!/^\d+\s*(kB|MB|GB)$/.test(maintenanceWorkMem)) throw new Error('--maintenance-work-mem must look like 64MB or 1GB');

const PAGE_CHARS = 3000;
/** Query words come from the vocabulary without its 100 most frequent words. */
const QUERY_MIN_RANK = 100;
const DIMENSIONS = 1536;
/** Topic clusters of the chunk embeddings, and the per-component noise around each centroid. */
const CLUSTERS = 1000;
/** Noise norm ≈ 0.035 × √(1536 / 3) ≈ 0.79: cosine ≈ 0.78 to the centroid, ≈ 0.6 between members. */
const CLUSTER_NOISE = 0.035;

// --- HTTP -------------------------------------------------------------------------------------

interface Caller {
  token: string;
}

function api(baseUrl: string) {
  async function call<T>(method: string, url: string, body?: unknown, as?: Caller): Promise<T> {
    const response = await fetch(`${baseUrl}${url}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(as ? { authorization: `Bearer ${as.token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }
  return {
    call,
    async newUser(): Promise<Caller & { id: number }> {
      const email = `bench-${Date.now()}-${randomBytes(4).toString('hex')}@example.com`;
      const password = `bench-${randomBytes(12).toString('hex')}`;
      const user = await call<{ id: number }>('POST', '/auth/users/', { email, password, name: 'Bench User' });
      const login = await call<{ auth_token: string }>('POST', '/auth/token/login/', { email, password });
      return { token: login.auth_token, id: user.id };
    },
    /** Upload step 1 + the signed PUT; returns the document id. */
    async upload(as: Caller, workspace: string, kb: string, name: string, contentType: string, bytes: Buffer): Promise<string> {
      const created = await call<{ document: { id: string }; upload: { url: string; method: string; headers: Record<string, string> } }>(
        'POST',
        `/api/workspaces/${workspace}/documents/upload/`,
        { name, content_type: contentType, size: bytes.length, knowledge_base_ids: [kb] },
        as,
      );
      // The signature covers method, key, type, size and expiry, not the host: send it to our port.
      const signed = new URL(created.upload.url);
      const put = await fetch(`${baseUrl}${signed.pathname}${signed.search}`, {
        method: created.upload.method,
        headers: created.upload.headers,
        body: bytes,
      });
      if (put.status >= 300) throw new Error(`signed PUT answered ${put.status}: ${(await put.text()).slice(0, 300)}`);
      await put.arrayBuffer().catch(() => undefined);
      return created.document.id;
    },
  };
}

// --- Measurements -----------------------------------------------------------------------------

interface IngestionRow {
  label: string;
  documents: number;
  pages: number;
  chunks: number;
  seconds: number;
  failed: number;
  extractSeconds: number;
  chunkSeconds: number;
  bytes: number;
}

interface LatencyRow {
  label: string;
  latencies: number[];
  hits: number[];
}

function latencyTable(rows: LatencyRow[]): string[] {
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);
  return [
    '| path | searches | p50 (ms) | p95 (ms) | p99 (ms) | mean (ms) | results per search (mean) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const sorted = ascending(r.latencies);
      return `| ${r.label} | ${sorted.length} | ${fmt(percentile(sorted, 50), 1)} | ${fmt(percentile(sorted, 95), 1)} | ${fmt(percentile(sorted, 99), 1)} | ${fmt(mean(sorted), 1)} | ${fmt(mean(r.hits), 1)} |`;
    }),
  ];
}

function ingestionTable(rows: IngestionRow[]): string[] {
  return [
    '| documents | pages | chunks | wall time (s) | **pages/s** | **chunks/s** | in-process extract only (pages/s) | in-process chunking only (pages/s) | failed |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.label} | ${fmt(r.pages)} | ${fmt(r.chunks)} | ${fmt(r.seconds, 2)} | ${fmt(r.pages / r.seconds, 1)} | ${fmt(r.chunks / r.seconds, 1)} | ` +
        `${fmt(r.pages / r.extractSeconds, 1)} | ${fmt(r.pages / r.chunkSeconds, 1)} | ${r.failed} |`,
    ),
  ];
}

/**
 * Runs the service's own query builders under EXPLAIN: a db whose execute() prefixes the
 * statement (with ANALYZE: executed and timed; without: planned only).
 */
function explaining(db: DbOrTx, plans: string[][], analyze = true): DbOrTx {
  return {
    execute: async (query: SQL) => {
      const prefix = analyze ? sql`EXPLAIN (ANALYZE, BUFFERS) ` : sql`EXPLAIN `;
      const result = (await db.execute(sql`${prefix}${query}`)) as unknown as { rows: Array<Record<string, string>> };
      // The 1,536 numbers of a vector literal would drown the plan.
      plans.push(result.rows.map((r) => Object.values(r)[0]!.replace(/'\[([^,\]]+),[^\]]{200,}\]'/g, "'[$1, … 1536 values]'")));
      return { rows: [] };
    },
  } as unknown as DbOrTx;
}

async function main(): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    throw new Error('bench/knowledge.ts runs on PostgreSQL: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres); it creates and drops its own database there');
  }
  const loadBefore = loadAverage();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-knowledge-'));
  const bench = await createBenchDatabase(serverUrl, 'wsai_bench_knowledge');
  const fake = await startFakeModelServer();
  const trim = setInterval(() => fake.requests.splice(0, fake.requests.length), 1000);
  trim.unref();
  const plansFile = path.join(dataDir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify({ free: { ai_credit: 1_000_000, max_documents: 1_000_000, max_storage_bytes: 100 * 1024 ** 3 } }));
  const config = loadConfig({
    ...process.env,
    ...fake.env,
    DATABASE_URL: bench.url,
    REDIS_URL: '',
    EMBEDDING_MODEL: '',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    SECRET_KEY: randomBytes(32).toString('hex'),
    ALLOW_SIGNUP: 'true',
    THROTTLE_DOCUMENT_UPLOADS: '1000000/hour',
    PLANS_FILE: plansFile,
  });
  process.stdout.write(`starting the app on ${bench.label} (migrations run on start-up)...\n`);
  const deps = await createDeps(config, createLogger('silent'));
  const app = await buildApp(deps);
  const admin = new pg.Client({ connectionString: bench.url });
  await admin.connect();
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('server has no TCP address');
    const client = api(`http://127.0.0.1:${address.port}`);
    // As in the embedded server: jobs run in this process.
    await deps.jobs.startWorker();
    const { rows: versionRows } = await admin.query<{ server_version: string; extversion: string }>(
      "SELECT current_setting('server_version') AS server_version, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS extversion",
    );
    const versions = `PostgreSQL ${versionRows[0]?.server_version}, pgvector ${versionRows[0]?.extversion}`;
    const user = await client.newUser();
    const lines: string[] = [];
    let efSearch = '?';

    // --- (a) ingestion ------------------------------------------------------------------------
    let ingestion: { rows: IngestionRow[]; load: string } | undefined;
    if (!args['skip-ingestion'] && pdfDocs + textDocs > 0) {
      const workspace = (await client.call<{ id: string }>('POST', '/api/workspaces/', { name: 'Ingestion bench' }, user)).id;
      const kb = (await client.call<{ id: string }>('POST', `/api/workspaces/${workspace}/knowledge-bases/`, { name: 'Ingestion' }, user)).id;
      const rows: IngestionRow[] = [];
      const kinds: Array<{ label: string; count: number; contentType: string; ext: string; make: (pages: string[]) => Buffer }> = [
        { label: 'PDF', count: pdfDocs, contentType: 'application/pdf', ext: 'pdf', make: (pages) => buildPdf(pages.map((p) => wrap(p, 95))) },
        { label: 'plain text', count: textDocs, contentType: 'text/plain', ext: 'txt', make: (pages) => Buffer.from(pages.join('\n\n'), 'utf8') },
      ];
      for (const kind of kinds) {
        if (kind.count === 0) continue;
        process.stdout.write(`(a) ${kind.count} ${kind.label} documents of ${pagesPerDoc} pages: generating and uploading...\n`);
        const files = Array.from({ length: kind.count }, (_, d) => {
          const random = prng(1000 + d);
          const pages = Array.from({ length: pagesPerDoc }, () => prose(random, PAGE_CHARS, COMMON));
          return kind.make(pages);
        });
        // The pure steps alone, in this process, on the first file (the job does exactly these),
        // after one run on a small file of the same kind so module loading and JIT are not counted.
        const warm = await extractText({
          bytes: kind.make([prose(prng(1), PAGE_CHARS, COMMON), prose(prng(2), PAGE_CHARS, COMMON)]),
          contentType: kind.contentType,
          filename: `warm.${kind.ext}`,
        });
        chunkDocument(warm);
        const e0 = performance.now();
        const extracted = await extractText({ bytes: files[0]!, contentType: kind.contentType, filename: `doc.${kind.ext}` });
        const e1 = performance.now();
        chunkDocument(extracted);
        const e2 = performance.now();
        const ids: string[] = [];
        for (let d = 0; d < files.length; d++) {
          ids.push(await client.upload(user, workspace, kb, `${kind.label.replace(' ', '-')}-${d}.${kind.ext}`, kind.contentType, files[d]!));
        }
        process.stdout.write(`(a) confirming ${ids.length} uploads and waiting for the queue to drain...\n`);
        const t0 = performance.now();
        for (const id of ids) await client.call('POST', `/api/workspaces/${workspace}/documents/${id}/confirm-upload/`, undefined, user);
        const deadline = Date.now() + 10 * 60_000;
        let statuses: Array<{ status: string; n: number }> = [];
        for (;;) {
          ({ rows: statuses } = await admin.query<{ status: string; n: number }>(
            'SELECT processing_status AS status, count(*)::int AS n FROM documents WHERE id = ANY($1::uuid[]) GROUP BY 1',
            [ids],
          ));
          const finished = statuses.filter((s) => s.status === 'ready' || s.status === 'failed').reduce((a, s) => a + s.n, 0);
          if (finished === ids.length) break;
          if (Date.now() > deadline) throw new Error(`ingestion did not finish within 10 minutes: ${JSON.stringify(statuses)}`);
          await sleep(50);
        }
        const seconds = (performance.now() - t0) / 1000;
        const { rows: counted } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM document_chunks WHERE document_id = ANY($1::uuid[])', [ids]);
        const pages =
          kind.label === 'PDF' ? kind.count * pagesPerDoc : Math.round(files.reduce((a, f) => a + f.toString('utf8').length, 0) / PAGE_CHARS);
        rows.push({
          label: `${kind.count} × ${kind.label} (${pagesPerDoc} pages${kind.label === 'PDF' ? '' : ` of ${fmt(PAGE_CHARS)} characters`})`,
          documents: kind.count,
          pages,
          chunks: counted[0]?.n ?? 0,
          seconds,
          failed: statuses.find((s) => s.status === 'failed')?.n ?? 0,
          extractSeconds: ((e1 - e0) / 1000) * kind.count,
          chunkSeconds: ((e2 - e1) / 1000) * kind.count,
          bytes: files.reduce((a, f) => a + f.length, 0),
        });
      }
      ingestion = { rows, load: loadAverage() };
      process.stdout.write(`\n${ingestionTable(rows).join('\n')}\n\n`);
    }

    // --- (b) search at scale --------------------------------------------------------------------
    let search:
      | {
          rows: LatencyRow[];
          plans: { lexical: string[]; vector: string[]; small: string[] };
          usage: { gin: number; hnsw: number; planned: number };
          timings: Record<string, number>;
          recall?: number;
          load: string;
          total: number;
        }
      | undefined;
    if (!args['skip-search']) {
      const workspace = (await client.call<{ id: string }>('POST', '/api/workspaces/', { name: 'Search bench' }, user)).id;
      const kb = (await client.call<{ id: string }>('POST', `/api/workspaces/${workspace}/knowledge-bases/`, { name: 'Search' }, user)).id;
      const chat = (await client.call<{ id: string }>('POST', `/api/workspaces/${workspace}/chats/`, { name: 'Search bench' }, user)).id;
      await client.call('POST', `/api/workspaces/${workspace}/chats/${chat}/knowledge-bases/attach/`, { knowledge_base_ids: [kb] }, user);
      const documentCount = Math.ceil(totalChunks / chunksPerDoc);
      const timings: Record<string, number> = {};

      process.stdout.write(`(b) ${documentCount} documents, ${fmt(totalChunks)} chunks: inserting with the GIN and HNSW indexes dropped...\n`);
      const { rows: docRows } = await admin.query<{ id: string }>(
        `INSERT INTO documents (workspace_id, name, content_type, size, source_kind, storage_key, processing_status, uploaded_by, stored_at)
         SELECT $1, 'bench-' || g || '.txt', 'text/plain', 100000, 'upload', 'bench/' || g, 'ready', $2, now()
         FROM generate_series(1, $3::int) g RETURNING id`,
        [workspace, user.id, documentCount],
      );
      await admin.query('INSERT INTO knowledge_base_documents (knowledge_base_id, document_id, added_by) SELECT $1, unnest($2::uuid[]), $3', [
        kb,
        docRows.map((r) => r.id),
        user.id,
      ]);
      // The 1% case: a second chat whose knowledge base holds 1% of the same workspace's chunks.
      const smallKb = (await client.call<{ id: string }>('POST', `/api/workspaces/${workspace}/knowledge-bases/`, { name: 'Search 1%' }, user)).id;
      const smallChat = (await client.call<{ id: string }>('POST', `/api/workspaces/${workspace}/chats/`, { name: 'Search bench 1%' }, user)).id;
      await client.call('POST', `/api/workspaces/${workspace}/chats/${smallChat}/knowledge-bases/attach/`, { knowledge_base_ids: [smallKb] }, user);
      const smallDocs = docRows.filter((_, i) => i % 100 === 50 % documentCount);
      await admin.query('INSERT INTO knowledge_base_documents (knowledge_base_id, document_id, added_by) SELECT $1, unnest($2::uuid[]), $3', [
        smallKb,
        (smallDocs.length ? smallDocs : docRows.slice(0, 1)).map((r) => r.id),
        user.id,
      ]);
      await admin.query('DROP INDEX document_chunks_tsv_idx');
      await admin.query('DROP INDEX document_chunks_embedding_idx');
      // Embeddings like a real corpus's: topic clusters (a random unit centroid each) plus per-row
      // noise, so near neighbours exist. Deterministic: the seed alone decides a vector.
      await admin.query(`CREATE FUNCTION bench_random_vector(seed integer, amplitude float8) RETURNS vector LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
          PERFORM setseed(seed::float8 / 4194304.0);
          RETURN (SELECT array_agg((random() * 2 - 1) * amplitude) FROM generate_series(1, ${DIMENSIONS}))::vector;
        END $$`);
      await admin.query(
        `CREATE TABLE bench_centroids AS SELECT k, l2_normalize(bench_random_vector(4000000 + k, 1)) AS v FROM generate_series(0, ${CLUSTERS - 1}) k`,
      );
      await admin.query('ALTER TABLE bench_centroids ADD PRIMARY KEY (k)');
      await admin.query(`CREATE FUNCTION bench_unit_vector(seed integer) RETURNS vector LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
          RETURN l2_normalize((SELECT v FROM bench_centroids WHERE k = seed % ${CLUSTERS}) + bench_random_vector(seed, ${CLUSTER_NOISE}));
        END $$`);
      const random = prng(42);
      const batch = 500;
      const i0 = performance.now();
      for (let start = 0; start < totalChunks; start += batch) {
        const n = Math.min(batch, totalChunks - start);
        const documentIds: string[] = [];
        const indexes: number[] = [];
        const contents: string[] = [];
        const tokens: number[] = [];
        for (let k = 0; k < n; k++) {
          const seq = start + k;
          documentIds.push(docRows[Math.floor(seq / chunksPerDoc)]!.id);
          indexes.push(seq % chunksPerDoc);
          const text = prose(random, 1200 + Math.floor(random() * 1000), LARGE);
          contents.push(text);
          tokens.push(Math.round(text.length / 4.2));
        }
        await admin.query(
          `INSERT INTO document_chunks (document_id, workspace_id, chunk_index, content, token_count, page, embedding)
           SELECT d, $1, i, c, t, NULL, bench_unit_vector(s)
           FROM unnest($2::uuid[], $3::int[], $4::text[], $5::int[], $6::int[]) AS u(d, i, c, t, s)`,
          [workspace, documentIds, indexes, contents, tokens, indexes.map((_, k) => start + k + 1)],
        );
        if ((start / batch) % 20 === 0) process.stdout.write(`  ${fmt(start + n)} rows, ${fmt((performance.now() - i0) / 1000, 0)} s\n`);
      }
      timings.insert = (performance.now() - i0) / 1000;
      await admin.query('ANALYZE documents, document_chunks, knowledge_base_documents, chat_knowledge_bases');
      const { rows: sizeRows } = await admin.query<{ n: number; table: string }>(
        "SELECT count(*)::int AS n, pg_size_pretty(pg_total_relation_size('document_chunks')) AS table FROM document_chunks",
      );
      const total = sizeRows[0]?.n ?? 0;

      process.stdout.write(`(b) building the GIN index...\n`);
      await admin.query(`SET maintenance_work_mem = '${maintenanceWorkMem}'`);
      await admin.query(`SET statement_timeout = '${buildTimeoutSeconds}s'`);
      let b0 = performance.now();
      await admin.query('CREATE INDEX "document_chunks_tsv_idx" ON "document_chunks" USING gin ("tsv")');
      timings.gin = (performance.now() - b0) / 1000;
      process.stdout.write(`(b) GIN built in ${fmt(timings.gin, 1)} s; building the HNSW index (m=16, ef_construction=64, the defaults)...\n`);
      const { rows: workers } = await admin.query<{ w: string }>("SELECT current_setting('max_parallel_maintenance_workers') AS w");
      b0 = performance.now();
      await admin.query('CREATE INDEX "document_chunks_embedding_idx" ON "document_chunks" USING hnsw ("embedding" vector_cosine_ops)');
      timings.hnsw = (performance.now() - b0) / 1000;
      await admin.query('RESET statement_timeout');
      efSearch = (await admin.query<{ ef: string }>("SELECT current_setting('hnsw.ef_search') AS ef")).rows[0]?.ef ?? '?';
      await admin.query('ANALYZE document_chunks');
      const { rows: indexSizes } = await admin.query<{ gin: string; hnsw: string }>(
        "SELECT pg_size_pretty(pg_relation_size('document_chunks_tsv_idx')) AS gin, pg_size_pretty(pg_relation_size('document_chunks_embedding_idx')) AS hnsw",
      );
      process.stdout.write(`(b) HNSW built in ${fmt(timings.hnsw, 1)} s\n`);

      const db = deps.database.db;
      const queryRandom = prng(7);
      const queries = Array.from({ length: searchWarmup + searches }, () => {
        const n = 3 + Math.floor(queryRandom() * 4);
        return Array.from({ length: n }, () => LARGE.word(queryRandom, QUERY_MIN_RANK)).join(' ');
      });
      // Query vectors come from the same clusters (a question is about some topic in the corpus).
      const { rows: queryVectorRows } = await admin.query<{ v: string }>(
        'SELECT bench_unit_vector(s)::text AS v FROM unnest($1::int[]) WITH ORDINALITY AS u(s, n) ORDER BY n',
        [queries.map((_, i) => 3_000_000 + i * 7)],
      );
      const vectors = queryVectorRows.map((r) => JSON.parse(r.v) as number[]);

      // EXPLAIN (ANALYZE, BUFFERS) of the service's exact statements, on the first query; then the
      // plain plan of every measured query, to count how often each index is chosen.
      const plans: string[][] = [];
      // lexicalCandidates runs two statements: the first (the chat's documents per configuration,
      // the query as tsquery) runs for real, the second (the ranking) under EXPLAIN.
      const explainLexical = async (target: DbOrTx, chatId: string, query: string) => {
        const statement = await lexicalStatement(db, chatId, query);
        if (statement) await target.execute(statement);
        else plans.push(['(no statement: the query has no lexeme)']);
      };
      await explainLexical(explaining(db, plans), chat, queries[0]!);
      await vectorCandidates(explaining(db, plans), chat, vectors[0]!);
      await explainLexical(explaining(db, plans), smallChat, queries[0]!);
      const [lexicalPlan = [], vectorPlan = [], smallPlan = []] = plans;
      const usage = { gin: 0, hnsw: 0, planned: 0 };
      for (let i = searchWarmup; i < searchWarmup + searches; i++) {
        const planned: string[][] = [];
        const statement = await lexicalStatement(db, chat, queries[i]!);
        if (statement) await explaining(db, planned, false).execute(statement);
        else planned.push([]);
        await vectorCandidates(explaining(db, planned, false), chat, vectors[i]!);
        if (planned[0]?.some((l) => l.includes('document_chunks_tsv_idx'))) usage.gin += 1;
        if (planned[1]?.some((l) => l.includes('document_chunks_embedding_idx'))) usage.hnsw += 1;
        usage.planned += 1;
      }

      const withEmbedding = createKnowledgeSearch({
        db,
        config: { EMBEDDING_MODEL: 'openai:text-embedding-3-small' },
        credit: deps.services.credit,
        modelRegistry: deps.services.modelRegistry,
        metrics: deps.metrics.recorder,
        log: createLogger('silent'),
      });
      const paths: Array<{ label: string; run: (i: number) => Promise<number> }> = [
        { label: 'lexical only: `lexicalCandidates` (GIN, ts_rank_cd)', run: async (i) => (await lexicalCandidates(db, chat, queries[i]!)).length },
        {
          label: 'lexical only, chat whose knowledge base holds 1% of the chunks',
          run: async (i) => (await lexicalCandidates(db, smallChat, queries[i]!)).length,
        },
        { label: 'vector only: `vectorCandidates` (HNSW, cosine), vector given', run: async (i) => (await vectorCandidates(db, chat, vectors[i]!)).length },
        {
          label: 'hybrid, vector given: both in parallel + `fuse` (RRF, top 6)',
          run: async (i) => fuse(await Promise.all([lexicalCandidates(db, chat, queries[i]!), vectorCandidates(db, chat, vectors[i]!)]), 6).length,
        },
        {
          label: '`createKnowledgeSearch().search` with EMBEDDING_MODEL on the fake (credit reserve/settle + embed call + hybrid)',
          run: async (i) => (await withEmbedding.search({ workspaceId: workspace, chatId: chat, query: queries[i]!, limit: 6 })).length,
        },
      ];
      const rows: LatencyRow[] = [];
      for (const p of paths) {
        process.stdout.write(`(b) ${searchWarmup} + up to ${searches} searches (at most ${pathSeconds} s): ${p.label}...\n`);
        const latencies: number[] = [];
        const hits: number[] = [];
        const deadline = performance.now() + (pathSeconds * 1000);
        for (let i = 0; i < searchWarmup + searches; i++) {
          const t0 = performance.now();
          const n = await p.run(i);
          if (i >= searchWarmup) {
            latencies.push(performance.now() - t0);
            hits.push(n);
            if (performance.now() > deadline) break;
          }
        }
        rows.push({ label: p.label, latencies, hits });
      }

      // Recall@30 of the HNSW scan against an exact scan (index scans off) for a few queries.
      let recall: number | undefined;
      if (recallQueries > 0) {
        process.stdout.write(`(b) recall@30 against exact scans on ${recallQueries} queries...\n`);
        let found = 0;
        let expected = 0;
        for (let i = 0; i < recallQueries; i++) {
          const approximate = new Set((await vectorCandidates(db, chat, vectors[i]!)).map((c) => c.id));
          const literal = `[${vectors[i]!.join(',')}]`;
          await admin.query('BEGIN');
          await admin.query('SET LOCAL enable_indexscan = off');
          await admin.query('SET LOCAL enable_bitmapscan = off');
          const { rows: exact } = await admin.query<{ id: string }>(
            `SELECT c.id FROM document_chunks c JOIN documents d ON d.id = c.document_id
             WHERE c.embedding IS NOT NULL AND c.document_id IN (
               SELECT kd.document_id FROM knowledge_base_documents kd
               JOIN chat_knowledge_bases ck ON ck.knowledge_base_id = kd.knowledge_base_id WHERE ck.session_id = $1)
               AND d.processing_status = 'ready'
             ORDER BY c.embedding <=> $2::vector, c.id LIMIT 30`,
            [chat, literal],
          );
          await admin.query('COMMIT');
          expected += exact.length;
          found += exact.filter((r) => approximate.has(r.id)).length;
        }
        recall = expected ? found / expected : undefined;
      }
      search = {
        rows,
        plans: { lexical: lexicalPlan, vector: vectorPlan, small: smallPlan },
        usage,
        timings: { ...timings, workers: Number(workers[0]?.w ?? 0) },
        recall,
        load: loadAverage(),
        total,
      };
      lines.push(`- document_chunks: ${fmt(total)} rows in total (${sizeRows[0]?.table} with TOAST and indexes); GIN ${indexSizes[0]?.gin}, HNSW ${indexSizes[0]?.hnsw}`);
      process.stdout.write(
        `\n${latencyTable(rows).join('\n')}\n\nindex choice over ${usage.planned} queries: GIN ${usage.gin}, HNSW ${usage.hnsw}; ` +
          `recall@30 ${recall ?? '-'}\n\n`,
      );
    }

    // --- Record ---------------------------------------------------------------------------------
    const m = machine();
    const out: string[] = [
      '`npm run bench:knowledge` (PostgreSQL only): the app in this process on 127.0.0.1 with the in-process job queue',
      '(WORKER_CONCURRENCY ' + config.WORKER_CONCURRENCY + ', EMBEDDING_MODEL unset) and a fake model server for the query-embedding path.',
      '',
      machineLine(),
      `- database: ${bench.label}; ${versions}; pool ${config.DATABASE_POOL_SIZE} connections; 1-/5-/15-minute load average ${loadBefore} at the start`,
      ...lines,
    ];
    if (ingestion) {
      out.push(
        '',
        `**(a) ingestion without embeddings** (load average ${ingestion.load} after the phase): documents generated here, ~${fmt(PAGE_CHARS)}`,
        `characters of generated prose per page (sentences of ${COMMON_WORDS.length} common English words with Zipf frequencies, ~4.1`,
        'characters per cl100k token like ordinary English; PDF: one PDF page each, Helvetica text objects; plain text: a "page" is',
        `${fmt(PAGE_CHARS)} characters). Uploaded with \`POST .../documents/upload/\` + the signed PUT, then all confirmed at once; wall`,
        'time from the first `confirm-upload/` until every document is `ready` (extract + chunk + store in the job, chunks',
        'of ≤ 500 cl100k tokens with 60 overlap). The last two columns time `extractText` and `chunkDocument` alone on',
        'one of the files, in the same process, single-threaded.',
        '',
        ...ingestionTable(ingestion.rows),
      );
    }
    if (search) {
      const t = search.timings;
      out.push(
        '',
        `**(b) search over ${fmt(totalChunks)} chunks** (load average ${search.load} after the phase): ${Math.ceil(totalChunks / chunksPerDoc)} documents ×`,
        `${chunksPerDoc} chunks in one knowledge base attached to the chat; chunk text 1,200–2,200 characters of generated prose`,
        `(sentences over a ${fmt(LARGE.size)}-word vocabulary: ${COMMON_WORDS.length} common English words, then made-up words; Zipf`,
        `frequencies, weight 1/rank); embeddings are deterministic pseudo-random unit vectors in ${fmt(CLUSTERS)} topic clusters (random unit`,
        `centroid + uniform noise of ±${CLUSTER_NOISE} per component, normalised: cosine ≈ 0.6 between members of a cluster, ≈ 0 across).`,
        `Query: 3–6 words drawn by frequency without the ${QUERY_MIN_RANK} most common (the service OR-s them); the query vector is made the`,
        'same way (from a cluster), not from the words.',
        `${searchWarmup} warm-up searches per path, then up to ${searches} sequential searches (one at a time; each path stops after ${pathSeconds} s).`,
        '',
        `- bulk insert (indexes dropped, \`INSERT ... SELECT FROM unnest(...)\` in batches of 500, vectors made in SQL): ${fmt(t.insert!, 1)} s`,
        `- index builds (maintenance_work_mem ${maintenanceWorkMem}, max_parallel_maintenance_workers ${t.workers}): GIN on tsv ${fmt(t.gin!, 1)} s; ` +
          `HNSW (vector_cosine_ops, m 16, ef_construction 64) ${fmt(t.hnsw!, 1)} s`,
        `- index choice over the ${search.usage.planned} measured queries (plain EXPLAIN of each): GIN in ${search.usage.gin} lexical plans, ` +
          `HNSW in ${search.usage.hnsw} vector plans`,
        ...(search.recall !== undefined
          ? [
              `- recall@30 of \`vectorCandidates\` against an exact scan (index and bitmap scans off), ${recallQueries} queries: ` +
                `${fmt(search.recall * 100, 1)} % (hnsw.ef_search ${efSearch})`,
            ]
          : []),
        '',
        ...latencyTable(search.rows),
        '',
        'EXPLAIN (ANALYZE, BUFFERS) of the service\'s own statements (first lines; the first query of the run):',
        '',
        '```',
        '-- lexicalCandidates (the second of its two statements)',
        ...search.plans.lexical.slice(0, 40),
        '-- lexicalCandidates, chat whose knowledge base holds 1% of the chunks',
        ...search.plans.small.slice(0, 40),
        '-- vectorCandidates',
        ...search.plans.vector.slice(0, 18),
        '```',
      );
      const usesGin = search.plans.lexical.some((l) => l.includes('document_chunks_tsv_idx'));
      const usesHnsw = search.plans.vector.some((l) => l.includes('document_chunks_embedding_idx'));
      out.push('', `- index use in the plans above: GIN ${usesGin ? 'used' : 'NOT used'} by the lexical query; HNSW ${usesHnsw ? 'used' : 'NOT used'} by the vector query`);
      if (!usesGin || !usesHnsw) process.stdout.write('warning: an index was not used (see the plans)\n');
      process.stdout.write(
        `\n-- lexical plan\n${search.plans.lexical.join('\n')}\n-- lexical plan, 1% chat\n${search.plans.small.join('\n')}\n-- vector plan\n${search.plans.vector.join('\n')}\n\n`,
      );
    }
    out.push('', `- load average at the end: ${loadAverage()}`);
    process.stdout.write(`${m.cpus} CPUs, ${m.cpu}, Node ${m.node}; ${versions}\n`);
    if (args['no-record']) process.stdout.write('not recorded (--no-record)\n');
    else appendResults('knowledge (PostgreSQL)', out);
  } finally {
    clearInterval(trim);
    await admin.end().catch(() => undefined);
    await app.close();
    await deps.close();
    await fake.close();
    await bench.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
