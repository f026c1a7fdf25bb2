/**
 * Small helpers shared by bench/stream.ts and bench/knowledge.ts: the machine description
 * recorded with every figure, percentiles and number formatting, a throwaway PostgreSQL
 * database, and appending an entry to RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

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

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export const ascending = (values: readonly number[]) => [...values].sort((a, b) => a - b);

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
