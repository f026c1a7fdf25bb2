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
 * (a) bench/knowledge-ingestion.ts: documents of every supported format generated with ~3,000
 *     characters of English-like text per page (a PDF page, slide, sheet, chapter, or 3,000
 *     characters); each is uploaded through `POST .../documents/upload/` + the signed PUT, then
 *     all of a format are confirmed at once; the clock runs from the first confirm until every
 *     document is `ready` (the queue drained). pages/s and MB/s per format.
 * (b) bench/knowledge-search.ts, run afterwards as its own process on the same server with the
 *     same --chunks and --searches (`npm run bench:knowledge:search` runs it alone, on either
 *     profile): lexical, vector and hybrid search with every chunk or 1 % in the chat's scope,
 *     recall@10, EXPLAIN plans and index sizes.
 * Results are printed and appended to bench/RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { createDeps } from '../src/deps.js';
import { createLogger } from '../src/platform/logger.js';
import { startFakeModelServer } from '../test/support/fake-model-server.js';
import { type IngestionResult, ingestionRecord, ingestionTable, runIngestionPhase, selectFormats } from './knowledge-ingestion.js';
import { appendResults, createBenchDatabase, loadAverage, machine, machineLine, positiveInt, fakeModelBenchConfig } from './support.js';

const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string', default: process.env.BENCH_CHUNKS ?? '100000' },
    searches: { type: 'string', default: process.env.BENCH_SEARCHES ?? '200' },
    'pdf-docs': { type: 'string', default: process.env.BENCH_PDF_DOCS ?? '4' },
    'text-docs': { type: 'string', default: process.env.BENCH_TEXT_DOCS ?? '4' },
    'format-docs': { type: 'string', default: process.env.BENCH_FORMAT_DOCS ?? '4' },
    formats: { type: 'string', default: process.env.BENCH_FORMATS ?? '' },
    pages: { type: 'string', default: process.env.BENCH_PAGES ?? '200' },
    'skip-ingestion': { type: 'boolean', default: false },
    'skip-search': { type: 'boolean', default: false },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
  allowPositionals: false,
});

const totalChunks = positiveInt('chunks', args.chunks);
const searches = positiveInt('searches', args.searches);
const pdfDocs = positiveInt('pdf-docs', args['pdf-docs'], 0);
const textDocs = positiveInt('text-docs', args['text-docs'], 0);
const formatDocs = positiveInt('format-docs', args['format-docs'], 0);
const ingestionPlan = selectFormats(args.formats, (format) => (format === 'pdf' ? pdfDocs : format === 'text' ? textDocs : formatDocs));
const pagesPerDoc = positiveInt('pages', args.pages);


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
  const config = fakeModelBenchConfig({
    databaseUrl: bench.url,
    dataDir,
    fakeEnv: fake.env,
    plan: { ai_credit: 1_000_000, max_documents: 1_000_000, max_storage_bytes: 100 * 1024 ** 3 },
    extra: { THROTTLE_DOCUMENT_UPLOADS: '1000000/hour' },
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

    // --- (a) ingestion ------------------------------------------------------------------------
    let ingestion: IngestionResult | undefined;
    if (!args['skip-ingestion'] && ingestionPlan.length > 0) {
      const log = (line: string) => process.stdout.write(`${line}\n`);
      const query = async <R>(text: string, values: unknown[]) => admin.query(text, values) as unknown as Promise<{ rows: R[] }>;
      ingestion = await runIngestionPhase({ call: client.call, upload: client.upload, user, query }, ingestionPlan, pagesPerDoc, log);
      process.stdout.write(`\n${ingestionTable(ingestion).join('\n')}\n\n`);
    }

    // --- (b) search at scale: bench/knowledge-search.ts (both profiles), run after this process. ---

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
    if (ingestion) out.push('', ...ingestionRecord(ingestion));
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

// (b) Search at scale, in its own process on the same server (bench/knowledge-search.ts).
if (!args['skip-search']) {
  const { spawnSync } = await import('node:child_process');
  const searchArgs = ['--chunks', String(totalChunks), '--searches', String(searches), ...(args['no-record'] ? ['--no-record'] : [])];
  const run = spawnSync(process.execPath, [...process.execArgv, path.join(path.dirname(new URL(import.meta.url).pathname), 'knowledge-search.ts'), ...searchArgs], {
    stdio: 'inherit',
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
