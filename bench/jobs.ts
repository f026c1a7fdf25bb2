/**
 * Background jobs benchmark (distributed profile: PostgreSQL + a private redis-server):
 *
 * (a) the cost of the outbox on `POST .../documents/from-url/`: requests/second and latency of the
 *     current service (task + job row in one transaction, delivery after commit) next to the
 *     previous implementation (task row, then a BullMQ add in the request), both run as real
 *     `src/server.ts` processes without a worker, in the same run, alternating;
 * (b) how long the reconciler takes to re-drive a stranded job, with the default settings
 *     (JOB_LEASE_SECONDS 30, JOB_RECONCILE_INTERVAL_SECONDS 10, JOB_DELIVERY_GRACE_SECONDS 30):
 *     a worker killed with SIGKILL while a peer worker runs (lease path), a worker killed and
 *     restarted on the same host (dead-worker path), Redis flushed while jobs wait (lost delivery).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:jobs [-- --previous cee4840 --duration 10 --connections 20 --reps 3 --no-record]
 *
 * DATABASE_URL names the server: fresh databases are created there and dropped afterwards. The
 * previous implementation is checked out with `git worktree` into a temporary directory (it shares
 * this tree's node_modules). All traffic goes to 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pg from 'pg';
import { type ServiceProcess, spawnService } from '../test/support/processes.js';
import { freePort, startRedisServer } from '../test/support/redis-server.js';
import { appendResults, ascending, cpuSeconds, createBenchDatabase, fmt, loadAverage, machineLine, percentile, positiveInt } from './support.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { values: args } = parseArgs({
  options: {
    previous: { type: 'string', default: process.env.BENCH_PREVIOUS ?? 'cee4840' },
    duration: { type: 'string', default: process.env.BENCH_DURATION ?? '10' },
    warmup: { type: 'string', default: process.env.BENCH_WARMUP ?? '3' },
    connections: { type: 'string', default: process.env.BENCH_CONNECTIONS ?? '20' },
    rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '2' },
    reps: { type: 'string', default: process.env.BENCH_REPS ?? '3' },
    'skip-outbox': { type: 'boolean', default: false },
    'skip-redrive': { type: 'boolean', default: false },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
});
const duration = positiveInt('duration', args.duration);
const warmup = positiveInt('warmup', args.warmup, 0);
const connections = positiveInt('connections', args.connections);
const rounds = positiveInt('rounds', args.rounds);
const reps = positiveInt('reps', args.reps);
const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) throw new Error('Set DATABASE_URL to a PostgreSQL server (with pgvector); the benchmark creates its own databases there');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SECRET_KEY = `bench-secret-${randomBytes(16).toString('hex')}`;
const say = (line: string) => process.stdout.write(`${line}\n`);

/** A page server: `/slow` answers after a minute (a job that is surely running when killed). */
async function startPages() {
  const server = createServer((req, res) => {
    const delay = req.url?.startsWith('/slow') ? 60_000 : 0;
    const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>A short page about tides.</p>'), delay);
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

async function call(base: string, method: string, url: string, body?: unknown, token?: string) {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : {}) as Record<string, unknown>;
}

/** A user, a workspace and a token on a running service. */
async function account(base: string) {
  const email = `bench-${randomBytes(4).toString('hex')}@example.com`;
  await call(base, 'POST', '/auth/users/', { email, password: 'bench-password-1', name: 'Bench' });
  const token = (await call(base, 'POST', '/auth/token/login/', { email, password: 'bench-password-1' })).auth_token as string;
  const ws = (await call(base, 'POST', '/api/workspaces/', { name: 'Bench' }, token)).id as string;
  return { token, ws };
}

function serviceEnv(extra: Record<string, string>, dataDir: string, plansFile: string): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    SECRET_KEY,
    DATA_DIR: dataDir,
    PLANS_FILE: plansFile,
    LOG_LEVEL: 'info',
    THROTTLE_DOCUMENT_UPLOADS: '100000000/hour',
    URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32',
    ...extra,
  };
}

// --- (a) the outbox on from-url/ ---------------------------------------------------------------

interface Throughput {
  label: string;
  round: number;
  result: autocannon.Result;
  /** Per request: the server process's CPU (user + system) and its database's activity. */
  cpuMs: number;
  commits: number;
  inserted: number;
  updated: number;
}

async function databaseActivity(admin: pg.Client, name: string) {
  const { rows } = await admin.query<{ commits: string; inserted: string; updated: string }>(
    'SELECT xact_commit AS commits, tup_inserted AS inserted, tup_updated AS updated FROM pg_stat_database WHERE datname = $1',
    [name],
  );
  return { commits: Number(rows[0]!.commits), inserted: Number(rows[0]!.inserted), updated: Number(rows[0]!.updated) };
}

async function outbox(redisUrl: string, pagesUrl: string, dataDir: string, plansFile: string) {
  const previousDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-previous-'));
  say(`checking out ${args.previous} into ${previousDir}...`);
  execFileSync('git', ['worktree', 'add', '--detach', previousDir, args.previous!], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(previousDir, 'node_modules'));
  const previousCommit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: previousDir, encoding: 'utf8' }).trim();
  const currentCommit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const databases = [await createBenchDatabase(serverUrl!, 'wsai_bench_jobs_prev'), await createBenchDatabase(serverUrl!, 'wsai_bench_jobs_cur')];
  const servers: ServiceProcess[] = [];
  const rows: Throughput[] = [];
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const targets = [];
    for (const [i, variant] of (['previous', 'current'] as const).entries()) {
      const port = await freePort();
      const env = serviceEnv(
        {
          PORT: String(port),
          DATABASE_URL: databases[i]!.url,
          REDIS_URL: redisUrl,
          REDIS_PREFIX: `bench-${variant}`,
          RUN_WORKER_IN_PROCESS: 'false',
        },
        dataDir,
        plansFile,
      );
      const server = spawnService('server', env, { cwd: variant === 'previous' ? previousDir : ROOT });
      servers.push(server);
      await server.ready;
      const base = `http://127.0.0.1:${port}`;
      const { token, ws } = await account(base);
      targets.push({
        label: `${variant} (${variant === 'previous' ? previousCommit : currentCommit})`,
        base,
        token,
        ws,
        pid: server.pid,
        database: databases[i]!.name,
      });
    }
    for (let round = 1; round <= rounds; round += 1) {
      // Alternating order per round, so drift on a shared machine hits both alike.
      for (const target of round % 2 ? targets : [...targets].reverse()) {
        const options: autocannon.Options = {
          url: `${target.base}/api/workspaces/${target.ws}/documents/from-url/`,
          method: 'POST',
          headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url: `${pagesUrl}/page` }),
          connections,
          duration,
          renderResultsTable: false,
        };
        say(`from-url/ on ${target.label}, round ${round}: ${warmup} s warm-up, ${duration} s run...`);
        if (warmup > 0) await autocannon({ ...options, duration: warmup });
        // pg_stat_database lags by up to a stats interval: let it settle before and after.
        await sleep(1000);
        const cpuBefore = cpuSeconds(target.pid);
        const dbBefore = await databaseActivity(admin, target.database);
        const result = await autocannon(options);
        const cpu = cpuSeconds(target.pid) - cpuBefore;
        await sleep(1000);
        const dbAfter = await databaseActivity(admin, target.database);
        if (result.non2xx + result.errors > 0) throw new Error(`${target.label}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        const n = result.latency.totalCount;
        rows.push({
          label: target.label,
          round,
          result,
          cpuMs: (cpu * 1000) / n,
          commits: (dbAfter.commits - dbBefore.commits) / n,
          inserted: (dbAfter.inserted - dbBefore.inserted) / n,
          updated: (dbAfter.updated - dbBefore.updated) / n,
        });
      }
    }
  } finally {
    await admin.end().catch(() => undefined);
    for (const server of servers) await server.stop('SIGTERM').catch(() => undefined);
    for (const database of databases) await database.drop().catch(() => undefined);
    execFileSync('git', ['worktree', 'remove', '--force', previousDir], { cwd: ROOT, stdio: 'ignore' });
    rmSync(previousDir, { recursive: true, force: true });
  }
  const lines = [
    '| implementation | round | req/s (mean) | latency p50 (ms) | latency p99 (ms) | requests | app CPU per request (ms) | commits per request | rows inserted per request | rows updated per request |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      ({ label, round, result, cpuMs, commits, inserted, updated }) =>
        `| ${label} | ${round} | ${fmt(result.requests.average)} | ${fmt(result.latency.p50, 1)} | ${fmt(result.latency.p99, 1)} | ` +
        `${fmt(result.latency.totalCount)} | ${fmt(cpuMs, 2)} | ${fmt(commits, 2)} | ${fmt(inserted, 2)} | ${fmt(updated, 2)} |`,
    ),
  ];
  const mean = (label: string) => {
    const own = rows.filter((r) => r.label === label);
    return own.reduce((sum, r) => sum + r.result.requests.average, 0) / own.length;
  };
  const [previous, current] = [...new Set(rows.map((r) => r.label))];
  const change = ((mean(current!) / mean(previous!) - 1) * 100).toFixed(1);
  lines.push('', `- mean of the rounds: previous ${fmt(mean(previous!))} req/s, current ${fmt(mean(current!))} req/s (${change} %)`);
  return lines;
}

// --- (b) re-drive time -------------------------------------------------------------------------

interface Scenario {
  name: string;
  what: string;
  bound: string;
  samples: number[];
}

async function redrive(redisUrl: string, pagesUrl: string, dataDir: string, plansFile: string, redisPort: number) {
  const database = await createBenchDatabase(serverUrl!, 'wsai_bench_jobs_redrive');
  const port = await freePort();
  const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl, REDIS_PREFIX: 'bench-redrive', RUN_WORKER_IN_PROCESS: 'false', WORKER_CONCURRENCY: '4' };
  const api = spawnService('server', serviceEnv({ ...common, PORT: String(port) }, dataDir, plansFile));
  const base = `http://127.0.0.1:${port}`;
  const db = new pg.Client({ connectionString: database.url });
  const processes: ServiceProcess[] = [api];
  const worker = () => {
    const spawned = spawnService('worker', serviceEnv(common, dataDir, plansFile));
    processes.push(spawned);
    return spawned;
  };
  const scenarios: Scenario[] = [
    { name: 'worker killed, a peer worker alive (lease runs out)', what: 'SIGKILL → job running again on the peer', bound: 'JOB_LEASE_SECONDS + JOB_RECONCILE_INTERVAL_SECONDS = 40 s', samples: [] },
    { name: 'worker killed and restarted on the same host', what: 'SIGKILL, restart at once → job running again (the worker\'s start-up included)', bound: 'the worker\'s start-up (it ends dead workers\' leases of its host)', samples: [] },
    { name: 'Redis flushed while a job waits (worker busy)', what: 'FLUSHALL → job delivered again', bound: 'JOB_DELIVERY_GRACE_SECONDS + JOB_RECONCILE_INTERVAL_SECONDS = 40 s', samples: [] },
  ];
  const redriven = async (jobId: string) =>
    (await db.query<{ redriven: number; state: string }>('SELECT redriven, state FROM background_jobs WHERE id = $1', [jobId])).rows[0];
  /** Polls until the job was re-driven `count` times (and, unless told otherwise, is running again); returns when. */
  const until = async (jobId: string, count: number, options: { running?: boolean } = {}, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await redriven(jobId);
      if (row && row.redriven >= count && (options.running === false || row.state === 'running' || row.state === 'done')) return Date.now();
      if (Date.now() > deadline) throw new Error(`job ${jobId} not re-driven in ${timeoutMs} ms: ${JSON.stringify(row)}`);
      await sleep(50);
    }
  };
  const runningJob = async (token: string, ws: string) => {
    const res = await call(base, 'POST', `/api/workspaces/${ws}/documents/from-url/`, { url: `${pagesUrl}/slow-${randomBytes(3).toString('hex')}` }, token);
    const jobId = (res.task as { id: string }).id;
    for (;;) {
      if ((await redriven(jobId))?.state === 'running') return jobId;
      await sleep(20);
    }
  };
  try {
    await db.connect();
    await api.ready;
    const { token, ws } = await account(base);
    for (let rep = 1; rep <= reps; rep += 1) {
      say(`re-drive, repetition ${rep} of ${reps}...`);
      // 1. Two workers; the one running the job dies; the peer re-drives when the lease runs out.
      await db.query("UPDATE background_jobs SET state = 'done' WHERE state IN ('queued', 'running')");
      const first = worker();
      await first.ready;
      const jobId = await runningJob(token, ws);
      const peer = worker();
      await peer.ready;
      const before = (await redriven(jobId))!.redriven;
      let killedAt = Date.now();
      await first.stop('SIGKILL');
      scenarios[0]!.samples.push((await until(jobId, before + 1)) - killedAt);
      await peer.stop('SIGKILL');

      // 2. The only worker dies and is restarted at once on this host.
      await db.query("UPDATE background_jobs SET state = 'done' WHERE state IN ('queued', 'running')");
      const lone = worker();
      await lone.ready;
      const job2 = await runningJob(token, ws);
      const before2 = (await redriven(job2))!.redriven;
      killedAt = Date.now();
      await lone.stop('SIGKILL');
      const restarted = worker();
      await restarted.ready;
      scenarios[1]!.samples.push((await until(job2, before2 + 1)) - killedAt);

      // 3. A busy worker (four slow jobs running), a fifth job waiting in Redis: Redis loses everything.
      await restarted.stop('SIGKILL');
      await db.query("UPDATE background_jobs SET state = 'done' WHERE state IN ('queued', 'running')");
      const busy = worker();
      await busy.ready;
      for (let i = 0; i < 4; i += 1) await runningJob(token, ws);
      const waiting = (await call(base, 'POST', `/api/workspaces/${ws}/documents/from-url/`, { url: `${pagesUrl}/slow-wait` }, token)).task as { id: string };
      await sleep(200);
      const redis = new Redis(redisPort, '127.0.0.1');
      killedAt = Date.now();
      await redis.flushall();
      await redis.quit();
      // Re-driven = delivered again under a fresh id (it then waits for a free slot like any job).
      scenarios[2]!.samples.push((await until(waiting.id, 1, { running: false })) - killedAt);
      await busy.stop('SIGKILL');
    }
  } finally {
    for (const child of processes) await child.stop('SIGKILL').catch(() => undefined);
    await db.end().catch(() => undefined);
    await database.drop().catch(() => undefined);
  }
  const lines = [
    '| stranded by | measured | bound with the defaults | runs | min (s) | median (s) | max (s) |',
    '|---|---|---|---:|---:|---:|---:|',
    ...scenarios.map((s) => {
      const sorted = ascending(s.samples);
      return `| ${s.name} | ${s.what} | ${s.bound} | ${sorted.length} | ${fmt(sorted[0]! / 1000, 1)} | ${fmt(percentile(sorted, 50) / 1000, 1)} | ${fmt(sorted.at(-1)! / 1000, 1)} |`;
    }),
  ];
  return lines;
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-jobs-'));
  const plansFile = path.join(dataDir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify({ free: { max_documents: 100_000_000, max_storage_bytes: 1e15 } }));
  const redis = await startRedisServer();
  const pages = await startPages();
  const loadBefore = loadAverage();
  const sections: string[] = [];
  try {
    if (!args['skip-outbox']) {
      const table = await outbox(redis.url, pages.url, dataDir, plansFile);
      say(table.join('\n'));
      sections.push(
        `**(a) the outbox on \`POST .../documents/from-url/\`** (${connections} connections, ${warmup} s warm-up + ${duration} s per run, ` +
          `${rounds} alternating rounds; each implementation a real \`src/server.ts\` process under tsx on its own fresh database, ` +
          'no worker, a private redis-server; the page is never fetched):',
        '',
        ...table,
        '',
      );
    }
    if (!args['skip-redrive']) {
      const table = await redrive(redis.url, pages.url, dataDir, plansFile, redis.port);
      say(table.join('\n'));
      sections.push(
        '**(b) time to re-drive a stranded job** (default settings; real `src/worker.ts` processes; the job is a URL import whose page takes a minute, so it is surely running):',
        '',
        ...table,
        '',
      );
    }
  } finally {
    await pages.close();
    await redis.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (!args['no-record'] && sections.length) {
    appendResults('jobs (PostgreSQL + Redis)', [
      '`npm run bench:jobs` (see bench/README.md).',
      '',
      machineLine(),
      `- database: PostgreSQL at ${new URL(serverUrl!).host} (fresh databases, dropped afterwards); load average ${loadBefore} at the start, ${loadAverage()} at the end`,
      '',
      ...sections,
    ]);
  }
}

await main();
