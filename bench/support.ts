/**
 * Small helpers shared by the benchmarks: the machine description recorded with every figure,
 * percentiles and number formatting, a throwaway PostgreSQL database, appending an entry to
 * RESULTS.md, and HTTP load with autocannon.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { loadConfig } from '../src/config/env.js';

export const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'RESULTS.md');

export interface Machine {
  cpus: string;
  cpu: string;
  memory: string;
  node: string;
  os: string;
}

export function machine(): Machine {
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
  };
}

/** The 1-, 5- and 15-minute load averages, e.g. `1.67 / 2.10 / 2.30`. */
export const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number | string): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // utime and stime are fields 14 and 15 of stat (12 and 13 after the command name).
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU seconds used so far by each process of this machine named `postgres` (the server's
 * backends and helpers); null where /proc is not. Compare two samples with postgresCpuBetween.
 */
export function postgresCpuSeconds(): PostgresCpu | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  const byPid = new Map<string, number>();
  for (const pid of entries) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      byPid.set(pid, cpuSeconds(pid));
    } catch {
      // The process ended meanwhile.
    }
  }
  return byPid.size > 0 ? { byPid } : null;
}

/** A sample of the local PostgreSQL's processes' CPU seconds, by process. */
export interface PostgresCpu {
  byPid: Map<string, number>;
}

/**
 * CPU seconds the local PostgreSQL's processes used between two samples: per process (one that
 * started meanwhile counts from zero; one that ended meanwhile is left out, not subtracted).
 */
export function postgresCpuBetween(before: PostgresCpu | null, after: PostgresCpu | null): number | null {
  if (!before || !after) return null;
  let seconds = 0;
  for (const [pid, used] of after.byPid) seconds += used - (before.byPid.get(pid) ?? 0);
  return seconds;
}

/** This process's CPU seconds (user + system, every thread) so far. */
export function processCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export const ascending = (values: readonly number[]) => [...values].sort((a, b) => a - b);

/** The arithmetic mean (NaN for none, as `percentile`). */
export const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

/** The median of an ascending array (the mean of the middle two for an even length). */
export const median = (sorted: readonly number[]) =>
  sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export const mib = (bytes: number) => fmt(bytes / 1024 ** 2, 1);

export function positiveInt(name: string, value: string | undefined, min = 1): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min} (got ${value})`);
  return n;
}

/** A throwaway database on the server DATABASE_URL points at; `drop()` removes it. */
export async function createBenchDatabase(
  serverUrl: string,
  prefix: string,
): Promise<{ url: string; name: string; label: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    label: `PostgreSQL at ${url.hostname}:${url.port || '5432'} (fresh database, dropped afterwards)`,
    async drop() {
      const cleanup = new pg.Client({ connectionString: serverUrl });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

const RESULTS_HEADER = `# Benchmark results

Figures appended by the benchmarks in this folder (newest last). Each entry records the machine,
the date and the settings, so compare only entries from the same machine. How to run them:
[README.md](README.md).
`;

/** Appends one entry (a `## title: date` section) to RESULTS.md. */
export function appendResults(title: string, lines: string[]): void {
  if (!existsSync(RESULTS_FILE)) writeFileSync(RESULTS_FILE, RESULTS_HEADER);
  const entry = ['', `## ${title}: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}`, '', ...lines, ''].join('\n');
  appendFileSync(RESULTS_FILE, entry);
  process.stdout.write(`appended to ${path.relative(process.cwd(), RESULTS_FILE)}\n`);
}

export function machineLine(): string {
  const m = machine();
  return `- machine: ${m.cpus} CPUs (nproc), ${m.cpu}, ${m.memory} RAM, ${m.os}; Node ${m.node}`;
}

// --- HTTP load (bench/http.ts, bench/list.ts) ---------------------------------------------------

/** Listens on 127.0.0.1 at a free port; returns the base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no TCP address');
  return `http://127.0.0.1:${address.port}`;
}

/** One JSON request; the body parsed (or `{}`). */
export async function call(base: string, method: string, url: string, body?: unknown, token?: string) {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

export interface LoadTarget {
  label: string;
  url: string;
  path: string;
  headers: Record<string, string>;
}

export interface LoadSettings {
  connections: number;
  /** Seconds measured. */
  duration: number;
  /** Seconds of unrecorded load before (0: none). */
  warmup: number;
  /** autocannon worker threads (0: on this thread). */
  workers: number;
}

/** autocannon on one GET target: a warm-up, then the measured run (`beforeRun` between them). */
export async function measureLoad(
  target: LoadTarget,
  settings: LoadSettings,
  beforeRun?: () => void,
): Promise<autocannon.Result> {
  process.stdout.write(
    `measuring ${target.label} GET ${target.path}: ${settings.warmup} s warm-up, ${settings.duration} s run...\n`,
  );
  const options: autocannon.Options = {
    url: `${target.url}${target.path}`,
    headers: target.headers,
    connections: settings.connections,
    duration: settings.duration,
    workers: settings.workers,
    renderResultsTable: false,
  };
  if (settings.warmup > 0) await autocannon({ ...options, duration: settings.warmup });
  beforeRun?.();
  return autocannon(options);
}

export const LOAD_TABLE_HEAD =
  '| target | path | req/s (mean) | latency p50 (ms) | latency p99 (ms) | latency mean (ms) | requests | non-2xx + errors |';

/** The columns of LOAD_TABLE_HEAD for one run (extra cells may follow). */
export function loadCells(target: LoadTarget, result: autocannon.Result): string {
  return (
    `| ${target.label} | \`GET ${target.path}\` | ${fmt(result.requests.average)} | ${fmt(result.latency.p50, 1)} | ` +
    `${fmt(result.latency.p99, 1)} | ${fmt(result.latency.average, 2)} | ${fmt(result.latency.totalCount)} | ` +
    `${fmt(failedRequests(result))} |`
  );
}

export const failedRequests = (result: autocannon.Result) => result.non2xx + result.errors + result.timeouts;

/** Warns about runs that had failures; true when any had. */
export function reportFailures(rows: { target: LoadTarget; result: autocannon.Result }[]): boolean {
  const failures = rows.filter(({ result }) => failedRequests(result) > 0);
  for (const { target, result } of failures) {
    process.stdout.write(
      `warning: ${target.label} had ${result.non2xx} non-2xx responses, ${result.errors} errors, ` +
        `${result.timeouts} timeouts (status counts: ${JSON.stringify(result.statusCodeStats)})\n`,
    );
  }
  return failures.length > 0;
}

/** The command-line options of an autocannon benchmark (each also read from BENCH_*). */
export const LOAD_OPTIONS = {
  duration: { type: 'string', default: process.env.BENCH_DURATION ?? '10' },
  warmup: { type: 'string', default: process.env.BENCH_WARMUP ?? '3' },
  connections: { type: 'string', default: process.env.BENCH_CONNECTIONS ?? '50' },
  // One worker thread generates the load so the client does not share the servers' event loop.
  workers: { type: 'string', default: process.env.BENCH_WORKERS ?? '1' },
  'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
} as const;

export function loadSettings(values: { duration?: string; warmup?: string; connections?: string; workers?: string }): LoadSettings {
  return {
    duration: positiveInt('duration', values.duration),
    warmup: positiveInt('warmup', values.warmup, 0),
    connections: positiveInt('connections', values.connections),
    workers: positiveInt('workers', values.workers, 0),
  };
}

/** The app's settings for a benchmark on the throwaway database at `databaseUrl`, with its own DATA_DIR. */
export function benchAppConfig(databaseUrl: string, dataDir: string) {
  return loadConfig({
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    SECRET_KEY: `bench-secret-${randomBytes(16).toString('hex')}`,
    PUBLIC_BASE_URL: 'http://127.0.0.1:8000',
  });
}

/**
 * The app's settings for a benchmark that talks to a fake model server: no Redis, no embedding
 * model unless `extra` names one, logging silent, sign-up open, its own DATA_DIR, and a plans
 * file whose `free` plan is `plan` (limits high enough for the whole run).
 */
export function fakeModelBenchConfig(options: {
  databaseUrl: string;
  dataDir: string;
  fakeEnv: Record<string, string>;
  plan: Record<string, number>;
  extra?: Record<string, string>;
}) {
  const plansFile = path.join(options.dataDir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify({ free: options.plan }));
  return loadConfig({
    ...process.env,
    ...options.fakeEnv,
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: '',
    EMBEDDING_MODEL: '',
    LOG_LEVEL: 'silent',
    DATA_DIR: options.dataDir,
    SECRET_KEY: randomBytes(32).toString('hex'),
    ALLOW_SIGNUP: 'true',
    PLANS_FILE: plansFile,
    ...options.extra,
  });
}
