/**
 * HTTP benchmark: requests/second and latency of an authenticated read on the real app
 * (`GET /api/users/me/` by default) next to a bare Fastify route in the same run, so the figures
 * say how much the service's stack (auth hook, token lookup, queries, serialisation) costs on
 * top of Fastify itself on this machine.
 *
 *   npm run bench:http [-- --path /auth/users/me/ --duration 10 --connections 50 --warmup 3 --workers 1 --no-record]
 *
 * Every option also reads an environment variable (BENCH_PATH, BENCH_DURATION, ...).
 * The app uses an embedded PGlite database in a temporary directory, or DATABASE_URL when set.
 * All traffic goes to 127.0.0.1. Results are printed and appended to bench/RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type autocannon from 'autocannon';
import Fastify from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/env.js';
import { resolveSecretKey } from '../src/config/secret-key.js';
import { createDeps } from '../src/deps.js';
import { createLogger } from '../src/platform/logger.js';
import {
  call,
  listen,
  LOAD_OPTIONS,
  LOAD_TABLE_HEAD,
  type LoadTarget,
  loadCells,
  loadSettings,
  measureLoad,
  reportFailures,
} from './support.js';

const PREFERRED_PATH = '/api/users/me/';
// Until /api/users/me/ exists, the account endpoint is the closest authenticated read.
const FALLBACK_PATH = '/auth/users/me/';
// Other work on the machine skews the figures; the load average is recorded with them.
const loadAtStart = os.loadavg()[0]!.toFixed(2);
const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'RESULTS.md');

const { values: args } = parseArgs({
  options: {
    path: { type: 'string', default: process.env.BENCH_PATH },
    ...LOAD_OPTIONS,
  },
  allowPositionals: false,
});

const { duration, warmup, connections, workers } = loadSettings(args);

interface Row {
  target: LoadTarget;
  result: autocannon.Result;
}

function machine(): Record<string, string> {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    const model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (model?.[1]) cpu = model[1].trim();
  } catch {
    // Not Linux: os.cpus() is good enough.
  }
  return {
    cpus: String(os.availableParallelism()),
    cpu,
    memory: `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    load: os.loadavg()[0]!.toFixed(2),
  };
}

/** Where the app's data lives, without credentials. */
function describeDatabase(url: string | undefined): string {
  if (!url) return 'PGlite (embedded, temporary directory)';
  const parsed = new URL(url);
  return `PostgreSQL at ${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
}

function table(rows: Row[]): string {
  return [LOAD_TABLE_HEAD, '|---|---|---:|---:|---:|---:|---:|---:|', ...rows.map(({ target, result }) => loadCells(target, result))].join('\n');
}

const RESULTS_HEADER = `# Benchmark results

Figures appended by the benchmarks in this folder (newest last). Each entry records the machine,
the date and the settings, so compare only entries from the same machine. How to run them:
[README.md](README.md).

## Benchmarks

- **http** (\`npm run bench:http\`): requests/second and latency (p50, p99) of an authenticated
  read on the real app (\`GET /api/users/me/\`; \`GET /auth/users/me/\` before that route existed;
  the path measured is in each table) built with \`createDeps\` + \`buildApp\` (logging silent, a
  user registered and logged in through \`/auth/users/\` and \`/auth/token/login/\`), next to a bare
  Fastify route (\`GET /bare\`, small JSON) measured in the same run. Both listen on 127.0.0.1;
  autocannon generates the load from a worker thread in the same process, after a warm-up.
  "bare" is the ceiling of this machine and Node version; the gap to it is the cost of the
  service's stack (auth hook with a token lookup, the user query, response validation and
  serialisation, request ids, metrics).
`;

function record(rows: Row[], database: string, pathNote: string): void {
  if (!existsSync(RESULTS_FILE)) writeFileSync(RESULTS_FILE, RESULTS_HEADER);
  const m = machine();
  const entry = [
    '',
    `## http: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}`,
    '',
    `- machine: ${m.cpus} CPUs (nproc), ${m.cpu}, ${m.memory} RAM, ${m.os}`,
    `- Node ${m.node}; database: ${database}; 1-minute load average ${loadAtStart} before the run, ${m.load} after`,
    `- settings: ${connections} connections, ${warmup} s warm-up + ${duration} s per target, ` +
      `${workers} autocannon worker thread(s), keep-alive, no pipelining`,
    ...(pathNote ? [`- note: ${pathNote}`] : []),
    '',
    table(rows),
    '',
  ].join('\n');
  appendFileSync(RESULTS_FILE, entry);
  process.stdout.write(`appended to ${path.relative(process.cwd(), RESULTS_FILE)}\n`);
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-'));
  const config = resolveSecretKey(
    loadConfig({ ...process.env, LOG_LEVEL: 'silent', DATA_DIR: dataDir, ALLOW_SIGNUP: 'true' }),
  );
  const database = describeDatabase(config.DATABASE_URL);
  process.stdout.write(`starting the app on ${database} (migrations run on start-up)...\n`);
  const deps = await createDeps(config, createLogger('silent'));
  const app = await buildApp(deps);
  const bare = Fastify({ logger: false });
  bare.get('/bare', async () => ({ id: 1, email: 'bench@example.com', name: 'Bench User' }));

  let token: string | undefined;
  let appUrl: string | undefined;
  const password = `bench-${randomBytes(12).toString('hex')}`;
  try {
    appUrl = await listen(app);
    const bareUrl = await listen(bare);

    let benchPath = args.path ?? PREFERRED_PATH;
    let pathNote = '';
    if (!app.hasRoute({ method: 'GET', url: benchPath })) {
      if (args.path) throw new Error(`the app has no route GET ${benchPath}`);
      pathNote = `GET ${PREFERRED_PATH} does not exist in this build; measured GET ${FALLBACK_PATH} instead`;
      process.stdout.write(`${pathNote}\n`);
      benchPath = FALLBACK_PATH;
    }

    // A real user and token, made through the real endpoints.
    const email = `bench-${Date.now()}-${randomBytes(4).toString('hex')}@example.com`;
    const registered = await call(appUrl, 'POST', '/auth/users/', { email, password, name: 'Bench User' });
    if (registered.status !== 201) throw new Error(`registration failed: ${registered.status} ${JSON.stringify(registered.body)}`);
    const login = await call(appUrl, 'POST', '/auth/token/login/', { email, password });
    token = typeof login.body.auth_token === 'string' ? login.body.auth_token : undefined;
    if (login.status !== 200 || !token) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`);
    const probe = await call(appUrl, 'GET', benchPath, undefined, token);
    if (probe.status !== 200) throw new Error(`GET ${benchPath} answered ${probe.status}: ${JSON.stringify(probe.body)}`);

    const targets: LoadTarget[] = [
      { label: 'bare Fastify', url: bareUrl, path: '/bare', headers: {} },
      { label: 'app', url: appUrl, path: benchPath, headers: { authorization: `Bearer ${token}` } },
    ];
    const rows: Row[] = [];
    for (const target of targets) rows.push({ target, result: await measureLoad(target, { connections, duration, warmup, workers }) });

    const m = machine();
    process.stdout.write(
      `\n${m.cpus} CPUs, ${m.cpu}, ${m.memory}, Node ${m.node}; ${database}; ${connections} connections\n\n` +
        `${table(rows)}\n\n`,
    );
    const failed = reportFailures(rows);
    if (args['no-record']) process.stdout.write('not recorded (--no-record)\n');
    else record(rows, database, pathNote);
    if (failed) process.exitCode = 1;
  } finally {
    // On PostgreSQL the bench user would otherwise stay behind.
    if (token && appUrl) {
      await call(appUrl, 'DELETE', '/auth/users/me/', { current_password: password }, token).catch(() => undefined);
    }
    await bare.close();
    await app.close();
    await deps.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
