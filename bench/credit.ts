/**
 * Credit gate benchmark (PostgreSQL): `credit.admit` + `credit.settle` (the billing gate and the
 * charge around every model call) for one workspace with an empty ledger and with 1,000,000
 * ledger rows in its current credit period, next to the previous implementation's statements
 * (lock the workspace row, SUM the period's ledger, SUM the open reservations, insert; then close
 * and insert) replayed as SQL in the same run. Sequential calls give the latency; concurrent
 * calls of the one workspace show whether they queue behind each other.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:credit [-- --rows 1000000 --calls 300 --concurrency 20 --no-record]
 *
 * A fresh database is created on DATABASE_URL's server (migrated on start) and dropped afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { observeStatements } from '../src/db/client.js';
import { createDeps } from '../src/deps.js';
import { createLogger } from '../src/platform/logger.js';
import { appendResults, ascending, benchAppConfig, createBenchDatabase, fmt, loadAverage, machineLine, percentile, positiveInt } from './support.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: process.env.BENCH_ROWS ?? '1000000' },
    calls: { type: 'string', default: process.env.BENCH_CALLS ?? '300' },
    concurrency: { type: 'string', default: process.env.BENCH_CONCURRENCY ?? '20' },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
});
const rows = positiveInt('rows', args.rows);
const calls = positiveInt('calls', args.calls);
const concurrency = positiveInt('concurrency', args.concurrency);
const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) throw new Error('Set DATABASE_URL to a PostgreSQL server (with pgvector); the benchmark creates its own database there');
const say = (line: string) => process.stdout.write(`${line}\n`);

// Every statement the app issues, counted (the previous implementation's own client is not).
let statements = 0;
const stopCounting = observeStatements(() => {
  statements++;
});

const loadAtStart = loadAverage();
const database = await createBenchDatabase(serverUrl, 'wsai_bench_credit');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-credit-'));
const config = benchAppConfig(database.url, dataDir);
const deps = await createDeps(config, createLogger(config.LOG_LEVEL));
const credit = deps.services.credit;
const client = new pg.Client({ connectionString: database.url });
await client.connect();

interface Figures {
  p50: number;
  p95: number;
  perSecond: number;
  statements: number;
}

try {
  const { rows: made } = await client.query<{ workspace: string; owner: number }>(
    `WITH owner AS (INSERT INTO users (email, name, password_hash) VALUES ('owner@bench.test', 'Owner', 'x') RETURNING id)
     INSERT INTO workspaces (name, slug, owner_id) SELECT 'Bench', 'bench-' || id, id FROM owner RETURNING id AS workspace, owner_id AS owner`,
  );
  const { workspace, owner } = made[0]!;
  let reference = 0;
  const usage = () => ({ kind: 'chat' as const, model: 'bench', userId: owner, costUsd: 1e-7, referenceId: `bench-call-${reference++}` });

  /** The current gate and charge through the service. */
  const current = async () => {
    const reservation = await credit.admit({ workspace, estimate: 1e-6 });
    await credit.settle(reservation, usage());
  };

  /** The previous implementation's statements (without the billing state, which both read alike). */
  const previous = async () => {
    await client.query('BEGIN');
    await client.query('SELECT id FROM workspaces WHERE id = $1 FOR UPDATE', [workspace]);
    await client.query('SELECT * FROM workspaces WHERE id = $1', [workspace]);
    await client.query(`SELECT sum(cost_usd) FROM credit_usage WHERE workspace_id = $1 AND created_at >= 'epoch'`, [workspace]);
    await client.query('SELECT sum(amount_usd) FROM credit_reservations WHERE workspace_id = $1 AND closed_at IS NULL AND expires_at > now()', [
      workspace,
    ]);
    const { rows: held } = await client.query<{ id: string }>(
      `INSERT INTO credit_reservations (workspace_id, amount_usd, expires_at) VALUES ($1, 0.000001, now() + interval '15 minutes') RETURNING id`,
      [workspace],
    );
    await client.query('COMMIT');
    await client.query('BEGIN');
    await client.query('UPDATE credit_reservations SET closed_at = now() WHERE id = $1 AND closed_at IS NULL', [held[0]!.id]);
    const u = usage();
    await client.query(
      `INSERT INTO credit_usage (workspace_id, user_id, kind, model, cost_usd, reference_id) VALUES ($1, $2, 'chat', 'bench', $3, $4)
       ON CONFLICT (reference_id) DO NOTHING`,
      [workspace, owner, u.costUsd, u.referenceId],
    );
    await client.query('COMMIT');
  };

  const measure = async (call: () => Promise<void>, countStatements: boolean): Promise<Figures> => {
    for (let i = 0; i < 20; i++) await call();
    const before = statements;
    const ms: number[] = [];
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await call();
      ms.push(performance.now() - started);
    }
    const perCall = countStatements ? (statements - before) / calls : 0;
    const sorted = ascending(ms);
    // Throughput with `concurrency` calls of the one workspace in flight (the service's pool only).
    let perSecond = 0;
    if (countStatements) {
      const started = performance.now();
      let left = calls;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (left-- > 0) await call();
        }),
      );
      perSecond = calls / ((performance.now() - started) / 1000);
    }
    return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), perSecond, statements: perCall };
  };

  const results: Array<{ label: string; current: Figures; previous: Figures }> = [];
  const round = async (label: string) => {
    const now = { current: await measure(current, true), previous: await measure(previous, false) };
    results.push({ label, ...now });
    say(
      `${label.padEnd(28)} current p50 ${fmt(now.current.p50, 2)} ms, p95 ${fmt(now.current.p95, 2)} ms, ${fmt(now.current.perSecond)} calls/s at ${concurrency}, ` +
        `${fmt(now.current.statements, 1)} statements  | previous p50 ${fmt(now.previous.p50, 2)} ms, p95 ${fmt(now.previous.p95, 2)} ms`,
    );
  };

  await round('empty ledger');
  say(`inserting ${fmt(rows)} ledger rows in the current period...`);
  const started = performance.now();
  await client.query(
    `INSERT INTO credit_usage (workspace_id, user_id, kind, model, cost_usd, reference_id, created_at)
     SELECT $1::uuid, $2, 'chat', 'bench', 0.0000001, 'bulk-' || g, now() - make_interval(secs => g % 86400)
     FROM generate_series(1, $3) g`,
    [workspace, owner, rows],
  );
  await client.query('VACUUM ANALYZE credit_usage');
  say(`inserted in ${fmt((performance.now() - started) / 1000, 1)} s`);
  await round(`${fmt(rows)} ledger rows`);

  const loadAtEnd = loadAverage();
  const [empty, full] = results as [(typeof results)[0], (typeof results)[0]];
  const change = (a: number, b: number) => `${b >= a ? '+' : ''}${fmt(((b - a) / a) * 100, 1)} %`;
  say(`current: p50 ${change(empty.current.p50, full.current.p50)} with the rows; previous: p50 ${change(empty.previous.p50, full.previous.p50)}`);
  if (!args['no-record']) {
    appendResults('credit gate (PostgreSQL)', [
      '`npm run bench:credit` (see bench/README.md).',
      '',
      machineLine(),
      `- database: ${database.label}; one workspace on the free plan (its period is its lifetime), ${fmt(rows)} ledger rows added between the two rounds`,
      `- load average ${loadAtStart} at the start, ${loadAtEnd} at the end`,
      `- per round: ${calls} sequential admit + settle after 20 warm-up (in-process service calls, the app's pool), then ${calls} with ${concurrency} in flight for the one workspace; statements counted as the app issues them. Previous: its statements replayed on one connection (lock, SUM ledger, SUM reservations, insert; close, insert), without the billing state both read alike`,
      '',
      '| ledger | current p50 (ms) | current p95 (ms) | current calls/s at concurrency | statements per admit + settle | previous p50 (ms) | previous p95 (ms) |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...results.map(
        (r) =>
          `| ${r.label} | ${fmt(r.current.p50, 2)} | ${fmt(r.current.p95, 2)} | ${fmt(r.current.perSecond)} | ${fmt(r.current.statements, 1)} | ${fmt(r.previous.p50, 2)} | ${fmt(r.previous.p95, 2)} |`,
      ),
      '',
      `- with the rows, current p50 ${change(empty.current.p50, full.current.p50)}, previous p50 ${change(empty.previous.p50, full.previous.p50)}`,
    ]);
  }
} finally {
  stopCounting();
  await client.end();
  await deps.close();
  await database.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
