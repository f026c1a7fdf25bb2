/**
 * Knowledge search at scale, on PostgreSQL or the embedded PGlite: lexical, vector and hybrid
 * latency and vector recall@10 against an exact ranking, for a chat whose knowledge base holds
 * every chunk of the workspace and for one that holds 1 %, with EXPLAIN (ANALYZE) of the final
 * statements and the index sizes.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:knowledge:search -- [--chunks 100000]
 *   npm run bench:knowledge:search -- --chunks 20000                    # embedded PGlite
 *   ... [--searches 100 --recall 50 --index-storage halfvec|vector --compare-index-storage --no-record]
 *
 * With DATABASE_URL (naming the server only) the app runs on a fresh database created there and
 * dropped at the end; without it on PGlite in a temporary directory. Data: `--chunks` chunk rows in
 * documents of 400 chunks, prose over a 30,400-word Zipf vocabulary, and one vector each in an
 * embedding generation (1,536 dimensions, deterministic unit vectors in 1,000 topic clusters, made
 * in SQL from a per-row seed), inserted with the indexes dropped; then the GIN index and the
 * generation's HNSW index (the service's own `ensureHnswIndex`, on what the service picks for the
 * profile: halfvec on PostgreSQL, vector on PGlite; `--index-storage` to choose) are built and
 * timed. With `--compare-index-storage` the index is rebuilt on the other storage too, its size,
 * build time, recall and vector search latency measured with the service's statement, then put
 * back (the decision per profile).
 * Searches call the service's own `lexicalCandidates`, `vectorCandidates`, `fuse` and
 * `createKnowledgeSearch` (query embedding on a fake model server), one at a time.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type SQL, sql } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import { type DbOrTx, queryRows, textArrayLiteral as textArray } from '../src/db/client.js';
import { createDeps } from '../src/deps.js';
import { ensureHnswIndex, type Generation } from '../src/modules/embeddings/embeddings.repo.js';
import { type VectorIndexStorage, vectorIndexStorages } from '../src/modules/embeddings/embeddings.table.js';
import { createKnowledgeSearch, EXACT_SCAN_MAX, fuse, lexicalCandidates, lexicalStatement, vectorCandidates, vectorStatement, withVectorPlan } from '../src/modules/knowledge-bases/knowledge-search.js';
import { createLogger } from '../src/platform/logger.js';
import { startFakeModelServer } from '../test/support/fake-model-server.js';
import { LARGE, prng, prose } from './corpus.js';
import { appendResults, ascending, call, createBenchDatabase, fmt, listen, loadAverage, machineLine, percentile, positiveInt, fakeModelBenchConfig } from './support.js';

const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: process.env.BENCH_CHUNKS ?? '100000' },
    searches: { type: 'string', default: process.env.BENCH_SEARCHES ?? '100' },
    warmup: { type: 'string', default: '10' },
    recall: { type: 'string', default: process.env.BENCH_RECALL_QUERIES ?? '50' },
    'path-seconds': { type: 'string', default: '40' },
    /** What the generation's HNSW index stores; by default what the service picks for the profile. */
    'index-storage': { type: 'string' },
    /** Also build the index with the other storage, measure its size, build time, recall and speed. */
    'compare-index-storage': { type: 'boolean', default: false },
    /** Stop after building the data and leave the database (PostgreSQL) for experiments. */
    'build-only': { type: 'boolean', default: false },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
});
const totalChunks = positiveInt('chunks', args.chunks);
const searches = positiveInt('searches', args.searches);
const warmup = positiveInt('warmup', args.warmup, 0);
const recallQueries = positiveInt('recall', args.recall, 0);
const pathSeconds = positiveInt('path-seconds', args['path-seconds']);
const CHUNKS_PER_DOC = 400;
const DIMENSIONS = 1536;
const CLUSTERS = 1000;
const CLUSTER_NOISE = 0.035;
const QUERY_MIN_RANK = 100;
const MODEL = 'openai:text-embedding-3-small';


function explaining(db: DbOrTx, into: string[][], analyze = true): DbOrTx {
  return {
    execute: async (query: SQL) => {
      const prefix = analyze ? sql`EXPLAIN (ANALYZE, BUFFERS) ` : sql`EXPLAIN `;
      const rows = await queryRows<Record<string, string>>(db, sql`${prefix}${query}`);
      into.push(rows.map((r) => Object.values(r)[0]!.replace(/'\[([^,\]]+),[^\]]{200,}\]'/g, "'[$1, … 1536 values]'").replace(/'\{[0-9a-f-,]{400,}\}'/g, "'{… uuids}'")));
      return { rows: [] };
    },
  } as unknown as DbOrTx;
}

interface Row {
  label: string;
  latencies: number[];
}

async function main() {
  const serverUrl = process.env.DATABASE_URL;
  const profile = serverUrl ? 'PostgreSQL' : 'PGlite';
  // As the service picks (deps.ts): full precision on PGlite, half floats on PostgreSQL.
  const indexStorage = (args['index-storage'] ?? (serverUrl ? 'halfvec' : 'vector')) as VectorIndexStorage;
  if (!vectorIndexStorages.includes(indexStorage)) throw new Error(`--index-storage is one of ${vectorIndexStorages.join(', ')}`);
  const loadBefore = loadAverage();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-ksearch-'));
  const bench = serverUrl ? await createBenchDatabase(serverUrl, 'wsai_bench_ksearch') : undefined;
  const fake = await startFakeModelServer();
  const trim = setInterval(() => fake.requests.splice(0, fake.requests.length), 1000);
  trim.unref();
  const config = fakeModelBenchConfig({
    databaseUrl: bench?.url ?? '',
    dataDir,
    fakeEnv: fake.env,
    plan: { ai_credit: 1_000_000, max_documents: 1_000_000, max_storage_bytes: 100 * 1024 ** 3 },
    // Index builds over 100,000+ rows take minutes.
    extra: { DATABASE_QUERY_TIMEOUT_MS: '3600000' },
  });
  const deps = await createDeps(config, createLogger('silent'));
  const app = await buildApp(deps);
  const db = deps.database.db;
  const exec = (statement: SQL) => db.execute(statement);
  let keep = false;
  try {
    const base = await listen(app);
    const email = `bench-${randomBytes(4).toString('hex')}@example.com`;
    await call(base, 'POST', '/auth/users/', { email, password: 'bench-password-123', name: 'Bench' });
    const token = (await call(base, 'POST', '/auth/token/login/', { email, password: 'bench-password-123' })).body.auth_token as string;
    const me = (await call(base, 'GET', '/auth/users/me/', undefined, token)).body as { id: number };
    const post = async (url: string, body: unknown) => (await call(base, 'POST', url, body, token)).body.id as string;
    const workspace = await post('/api/workspaces/', { name: 'Search bench' });
    const kbAll = await post(`/api/workspaces/${workspace}/knowledge-bases/`, { name: 'All' });
    const kbSmall = await post(`/api/workspaces/${workspace}/knowledge-bases/`, { name: 'One percent' });
    const chatAll = await post(`/api/workspaces/${workspace}/chats/`, { name: 'All' });
    const chatSmall = await post(`/api/workspaces/${workspace}/chats/`, { name: 'One percent' });
    await call(base, 'POST', `/api/workspaces/${workspace}/chats/${chatAll}/knowledge-bases/attach/`, { knowledge_base_ids: [kbAll] }, token);
    await call(base, 'POST', `/api/workspaces/${workspace}/chats/${chatSmall}/knowledge-bases/attach/`, { knowledge_base_ids: [kbSmall] }, token);
    const versions = (
      await queryRows<{ v: string; e: string }>(db, sql`SELECT current_setting('server_version') AS v, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS e`)
    )[0]!;

    // --- data ---------------------------------------------------------------------------------
    const timings: Record<string, number> = {};
    const docCount = Math.ceil(totalChunks / CHUNKS_PER_DOC);
    const docIds = (
      await queryRows<{ id: string }>(
        db,
        sql`INSERT INTO documents (workspace_id, name, content_type, size, source_kind, storage_key, processing_status, uploaded_by, stored_at)
            SELECT ${workspace}, 'bench-' || g || '.txt', 'text/plain', 100000, 'upload', 'bench/' || g, 'ready', ${me.id}, now()
            FROM generate_series(1, ${docCount}::int) g RETURNING id`,
      )
    ).map((r) => r.id);
    const small = docIds.filter((_, i) => i % 100 === 50 % docCount);
    const smallIds = small.length ? small : docIds.slice(0, 1);
    await exec(sql`INSERT INTO knowledge_base_documents (knowledge_base_id, document_id, added_by) SELECT ${kbAll}, unnest(${textArray(docIds)}::uuid[]), ${me.id}`);
    await exec(sql`INSERT INTO knowledge_base_documents (knowledge_base_id, document_id, added_by) SELECT ${kbSmall}, unnest(${textArray(smallIds)}::uuid[]), ${me.id}`);
    const [generation] = await queryRows<{ id: number }>(
      db,
      sql`INSERT INTO embedding_generations (model, dimensions, state, activated_at, index_storage)
          VALUES (${MODEL}, ${DIMENSIONS}, 'active', now(), ${indexStorage}) RETURNING id`,
    );
    const gen: Generation = { id: generation!.id, model: MODEL, dimensions: DIMENSIONS, indexStorage };
    await exec(sql`DROP INDEX document_chunks_tsv_idx`);
    await exec(
      sql.raw(`CREATE FUNCTION bench_random_vector(seed integer, amplitude float8) RETURNS vector LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
          PERFORM setseed(seed::float8 / 4194304.0);
          RETURN (SELECT array_agg((random() * 2 - 1) * amplitude) FROM generate_series(1, ${DIMENSIONS}))::vector;
        END $$`),
    );
    await exec(sql.raw(`CREATE TABLE bench_centroids AS SELECT k, l2_normalize(bench_random_vector(4000000 + k, 1)) AS v FROM generate_series(0, ${CLUSTERS - 1}) k`));
    await exec(sql`ALTER TABLE bench_centroids ADD PRIMARY KEY (k)`);
    await exec(
      sql.raw(`CREATE FUNCTION bench_unit_vector(seed integer) RETURNS vector LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
          RETURN l2_normalize((SELECT v FROM bench_centroids WHERE k = seed % ${CLUSTERS}) + bench_random_vector(seed, ${CLUSTER_NOISE}));
        END $$`),
    );
    process.stdout.write(`${profile}: inserting ${fmt(totalChunks)} chunks and vectors (indexes dropped)...\n`);
    const random = prng(42);
    const i0 = performance.now();
    for (let start = 0; start < totalChunks; start += 500) {
      const n = Math.min(500, totalChunks - start);
      const seqs = Array.from({ length: n }, (_, k) => start + k);
      const contents = seqs.map(() => prose(random, 1200 + Math.floor(random() * 1000), LARGE));
      await exec(sql`INSERT INTO document_chunks (document_id, workspace_id, chunk_index, content, token_count)
          SELECT d, ${workspace}, i, c, length(c) / 4 FROM unnest(${textArray(seqs.map((s) => docIds[Math.floor(s / CHUNKS_PER_DOC)]!))}::uuid[],
            ${`{${seqs.map((s) => s % CHUNKS_PER_DOC).join(',')}}`}::int[], ${textArray(contents)}::text[]) AS u(d, i, c)`);
      // Vectors by the row's sequence number (deterministic whatever the ids).
      await exec(sql`INSERT INTO chunk_embeddings (chunk_id, generation, document_id, embedding)
        SELECT c.id, ${gen.id}, c.document_id, bench_unit_vector(s)
        FROM unnest(${textArray(seqs.map((s) => docIds[Math.floor(s / CHUNKS_PER_DOC)]!))}::uuid[], ${`{${seqs.map((s) => s % CHUNKS_PER_DOC).join(',')}}`}::int[],
          ${`{${seqs.map((s) => s + 1).join(',')}}`}::int[]) AS u(d, i, s)
        JOIN document_chunks c ON c.document_id = u.d AND c.chunk_index = u.i`);
      if ((start / 500) % 20 === 0) process.stdout.write(`  ${fmt(start + n)} rows, ${fmt((performance.now() - i0) / 1000, 0)} s\n`);
    }
    timings.insert = (performance.now() - i0) / 1000;
    await exec(sql`ANALYZE`);
    let t0 = performance.now();
    await exec(sql.raw(`SET maintenance_work_mem = '${serverUrl ? '1GB' : '512MB'}'`));
    await exec(sql`CREATE INDEX document_chunks_tsv_idx ON document_chunks USING gin (tsv)`);
    timings.gin = (performance.now() - t0) / 1000;
    process.stdout.write(`GIN ${fmt(timings.gin, 1)} s; building the generation's HNSW index (${indexStorage})...\n`);
    t0 = performance.now();
    await ensureHnswIndex(db, gen);
    timings.hnsw = (performance.now() - t0) / 1000;
    await exec(sql`ANALYZE`);
    const size = async (name: string) => (await queryRows<{ s: string }>(db, sql`SELECT pg_size_pretty(pg_relation_size(${name}::regclass)) AS s`))[0]!.s;
    const sizes: Record<string, string> = {
      gin: await size('document_chunks_tsv_idx'),
      hnsw: await size(`chunk_embeddings_hnsw_${gen.id}`),
      chunks: (await queryRows<{ s: string }>(db, sql`SELECT pg_size_pretty(pg_total_relation_size('document_chunks')) AS s`))[0]!.s,
      vectors: (await queryRows<{ s: string }>(db, sql`SELECT pg_size_pretty(pg_total_relation_size('chunk_embeddings')) AS s`))[0]!.s,
    };
    process.stdout.write(`HNSW ${fmt(timings.hnsw, 1)} s (${sizes.hnsw})\n`);
    if (args['build-only']) {
      process.stdout.write(`built; database kept: ${bench?.url ?? dataDir} (chat all ${chatAll}, chat 1 % ${chatSmall}, generation ${gen.id})\n`);
      keep = true;
      return;
    }

    // --- queries ------------------------------------------------------------------------------
    const qr = prng(7);
    const queries = Array.from({ length: warmup + Math.max(searches, recallQueries) }, () =>
      Array.from({ length: 3 + Math.floor(qr() * 4) }, () => LARGE.word(qr, QUERY_MIN_RANK)).join(' '),
    );
    const vectors = (
      await queryRows<{ v: string }>(
        db,
        sql`SELECT bench_unit_vector(s)::text AS v FROM unnest(${`{${queries.map((_, i) => 3_000_000 + i * 7).join(',')}}`}::int[]) WITH ORDINALITY AS u(s, n) ORDER BY n`,
      )
    ).map((r) => JSON.parse(r.v) as number[]);

    // Recall@10 against the exact ranking (the full-precision distance, which no index provides).
    const exactTop = async (chat: string, v: number[], k: number) =>
      (
        await queryRows<{ id: string }>(
          db,
          sql`SELECT e.chunk_id AS id FROM chunk_embeddings e WHERE e.generation = ${gen.id} AND e.document_id IN (
                SELECT kd.document_id FROM knowledge_base_documents kd JOIN chat_knowledge_bases ck ON ck.knowledge_base_id = kd.knowledge_base_id
                WHERE ck.session_id = ${chat})
              ORDER BY e.embedding <=> ${`[${v.join(',')}]`}::vector LIMIT ${k}`,
        )
      ).map((r) => r.id);
    const recallOf = async (chat: string, approximate: (v: number[]) => Promise<string[]>) => {
      let found = 0;
      let expected = 0;
      for (let i = 0; i < recallQueries; i++) {
        const exact = await exactTop(chat, vectors[i]!, 10);
        const got = new Set((await approximate(vectors[i]!)).slice(0, 10));
        expected += exact.length;
        found += exact.filter((id) => got.has(id)).length;
      }
      return expected ? found / expected : NaN;
    };
    process.stdout.write(`recall@10 over ${recallQueries} queries...\n`);
    const efSearch = (await queryRows<{ v: string }>(db, sql`SELECT current_setting('hnsw.ef_search') AS v`))[0]!.v;
    const recall: Record<string, number> = {
      all: await recallOf(chatAll, async (v) => (await vectorCandidates(db, chatAll, gen, v)).map((c) => c.id)),
      small: await recallOf(chatSmall, async (v) => (await vectorCandidates(db, chatSmall, gen, v)).map((c) => c.id)),
    };

    // The other storage, for the decision per profile (embeddings.table.ts indexStorage): the same
    // generation's index rebuilt on it, searched through the service's own statement, then put back.
    let otherIndex: { storage: string; size: string; build: number; recall: number; p50: number; p95: number } | undefined;
    if (args['compare-index-storage']) {
      const other: Generation = { ...gen, indexStorage: indexStorage === 'halfvec' ? 'vector' : 'halfvec' };
      process.stdout.write(`building the index on ${other.indexStorage} for comparison...\n`);
      await exec(sql.raw(`DROP INDEX chunk_embeddings_hnsw_${gen.id}`));
      t0 = performance.now();
      await ensureHnswIndex(db, other);
      const build = (performance.now() - t0) / 1000;
      const lat: number[] = [];
      for (let i = 0; i < Math.min(searches, 50); i++) {
        const s = performance.now();
        await vectorCandidates(db, chatAll, other, vectors[i]!);
        lat.push(performance.now() - s);
      }
      const sorted = ascending(lat);
      otherIndex = {
        storage: other.indexStorage,
        size: await size(`chunk_embeddings_hnsw_${gen.id}`),
        build,
        recall: await recallOf(chatAll, async (v) => (await vectorCandidates(db, chatAll, other, v)).map((c) => c.id)),
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
      };
      await exec(sql.raw(`DROP INDEX chunk_embeddings_hnsw_${gen.id}`));
      t0 = performance.now();
      await ensureHnswIndex(db, gen);
      process.stdout.write(`${indexStorage} index rebuilt in ${fmt((performance.now() - t0) / 1000, 1)} s\n`);
    }

    const plans: string[][] = [];
    const explainLexical = async (chat: string) => {
      const statement = await lexicalStatement(db, chat, queries[0]!);
      if (statement) await explaining(db, plans).execute(statement);
    };
    await explainLexical(chatAll);
    await explainLexical(chatSmall);
    await withVectorPlan(db, gen, (on) => explaining(on, plans).execute(vectorStatement(chatAll, gen, vectors[0]!)));
    await withVectorPlan(db, gen, (on) => explaining(on, plans).execute(vectorStatement(chatSmall, gen, vectors[0]!)));

    const service = createKnowledgeSearch({ db, embeddings: deps.services.embeddings, metrics: deps.metrics.recorder, log: createLogger('silent') });
    const hybrid = async (chat: string, i: number) =>
      fuse(await Promise.all([lexicalCandidates(db, chat, queries[i]!), vectorCandidates(db, chat, gen, vectors[i]!)]), 6);
    const paths: Array<{ label: string; run: (i: number) => Promise<unknown> }> = [
      { label: 'lexical, chat holds all chunks', run: (i) => lexicalCandidates(db, chatAll, queries[i]!) },
      { label: 'lexical, chat holds 1 %', run: (i) => lexicalCandidates(db, chatSmall, queries[i]!) },
      { label: `vector (HNSW ${indexStorage}, iterative scan), chat holds all chunks`, run: (i) => vectorCandidates(db, chatAll, gen, vectors[i]!) },
      { label: `vector, chat holds 1 % (exact: ≤ ${fmt(EXACT_SCAN_MAX)} vectors in scope)`, run: (i) => vectorCandidates(db, chatSmall, gen, vectors[i]!) },
      { label: '**hybrid** (both in parallel + RRF), chat holds all chunks', run: (i) => hybrid(chatAll, i) },
      { label: '**hybrid**, chat holds 1 %', run: (i) => hybrid(chatSmall, i) },
      {
        label: '`createKnowledgeSearch().search` (credit + query embedding on the fake + hybrid), all chunks',
        run: (i) => service.search({ workspaceId: workspace, chatId: chatAll, query: queries[i]!, limit: 6 }),
      },
    ];
    const rows: Row[] = [];
    for (const p of paths) {
      process.stdout.write(`${p.label}...\n`);
      const latencies: number[] = [];
      const deadline = performance.now() + pathSeconds * 1000;
      for (let i = 0; i < warmup + searches; i++) {
        const s = performance.now();
        await p.run(i);
        if (i >= warmup) latencies.push(performance.now() - s);
        if (i >= warmup && performance.now() > deadline) break;
      }
      rows.push({ label: p.label, latencies });
    }

    // --- report -------------------------------------------------------------------------------
    const table = [
      '| path | searches | p50 (ms) | p95 (ms) | p99 (ms) |',
      '|---|---:|---:|---:|---:|',
      ...rows.map((r) => {
        const s = ascending(r.latencies);
        return `| ${r.label} | ${s.length} | ${fmt(percentile(s, 50), 1)} | ${fmt(percentile(s, 95), 1)} | ${fmt(percentile(s, 99), 1)} |`;
      }),
    ];
    const out = [
      `\`npm run bench:knowledge:search -- --chunks ${totalChunks}${args['index-storage'] ? ` --index-storage ${indexStorage}` : ''}${args['compare-index-storage'] ? ' --compare-index-storage' : ''}\` on **${profile}**`,
      '',
      machineLine(),
      `- database: ${bench?.label ?? 'PGlite in a temporary directory'}; PostgreSQL ${versions.v}, pgvector ${versions.e}; load average ${loadBefore} at the start, ${loadAverage()} at the end`,
      `- ${fmt(totalChunks)} chunks in ${fmt(docCount)} documents of one workspace; the 1 % chat's knowledge base holds ${smallIds.length} documents (${fmt(smallIds.length * CHUNKS_PER_DOC)} chunks); one 1,536-dimension vector per chunk (1,000 topic clusters)`,
      `- insert ${fmt(timings.insert, 1)} s; GIN build ${fmt(timings.gin, 1)} s; HNSW (${indexStorage}_cosine_ops, m 16, ef_construction 64) build ${fmt(timings.hnsw, 1)} s`,
      `- sizes: document_chunks ${sizes.chunks} (with TOAST and indexes), chunk_embeddings ${sizes.vectors} (with its indexes); GIN ${sizes.gin}; **HNSW ${indexStorage} ${sizes.hnsw}**`,
      ...(otherIndex
        ? [
            `- the same HNSW on \`${otherIndex.storage}\`: **${otherIndex.size}**, build ${fmt(otherIndex.build, 1)} s, recall@10 ${fmt(otherIndex.recall, 3)} (all chunks), vector search p50 ${fmt(otherIndex.p50, 1)} / p95 ${fmt(otherIndex.p95, 1)} ms (all chunks)`,
          ]
        : []),
      `- **vector recall@10** against the exact ranking, ${recallQueries} queries (hnsw.ef_search ${efSearch}, iterative_scan relaxed_order): chat holds all chunks **${fmt(recall.all!, 3)}**, chat holds 1 % **${fmt(recall.small!, 3)}**`,
      `- ${warmup} warm-up searches per path, then up to ${searches} (each path at most ${pathSeconds} s), one at a time`,
      '',
      ...table,
      '',
      'EXPLAIN (ANALYZE, BUFFERS) of the final statements (first query; lexical: the second of its two statements):',
      '',
      '```',
      '-- lexical, all chunks',
      ...plans[0]!.slice(0, 30),
      '-- lexical, 1 %',
      ...plans[1]!.slice(0, 30),
      '-- vector, all chunks',
      ...plans[2]!,
      '-- vector, 1 %',
      ...plans[3]!,
      '```',
    ];
    process.stdout.write(`\n${out.join('\n')}\n`);
    if (!args['no-record']) appendResults(`knowledge search (${profile}, ${fmt(totalChunks)} chunks)`, out);
  } finally {
    clearInterval(trim);
    await app.close();
    await deps.close();
    await fake.close();
    if (!keep) {
      await bench?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}

await main();
