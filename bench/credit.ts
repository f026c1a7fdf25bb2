/**
 * Credit gate benchmark (PostgreSQL): `credit.admit` + `credit.settle` (the billing gate and the
 * charge around every model call) for a workspace with an empty ledger and one with 1,000,000
 * ledger rows in its current credit period, measured in alternating rounds, next to the previous implementation's statements
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

/** Rounds of measurement; each measures both ledgers. */
const ROUNDS = 6;

try {
  /** A workspace with its owner; the two ledgers are two workspaces, measured in turns. */
  const makeWorkspace = async (label: string) => {
    const { rows: made } = await client.query<{ workspace: string; owner: number }>(
      `WITH owner AS (INSERT INTO users (email, name, password_hash) VALUES ($1, 'Owner', 'x') RETURNING id)
       INSERT INTO workspaces (name, slug, owner_id) SELECT 'Bench', 'bench-' || id, id FROM owner RETURNING id AS workspace, owner_id AS owner`,
      [`${label}@bench.test`],
    );
    return made[0]!;
  };
  const empty = await makeWorkspace('empty');
  const full = await makeWorkspace('full');
  let reference = 0;
  const usage = (owner: number) => ({ kind: 'chat' as const, model: 'bench', userId: owner, costUsd: 1e-7, referenceId: `bench-call-${reference++}` });

  /** The current gate and charge through the service. */
  const current = (target: { workspace: string; owner: number }) => async () => {
    const reservation = await credit.admit({ workspace: target.workspace, estimate: 1e-6 });
    await credit.settle(reservation, usage(target.owner));
  };

  /** The previous implementation's statements (without the billing state, which both read alike). */
  const previous = ({ workspace, owner }: { workspace: string; owner: number }) => async () => {
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
    const u = usage(owner);
    await client.query(
      `INSERT INTO credit_usage (workspace_id, user_id, kind, model, cost_usd, reference_id) VALUES ($1, $2, 'chat', 'bench', $3, $4)
       ON CONFLICT (reference_id) DO NOTHING`,
      [workspace, owner, u.costUsd, u.referenceId],
    );
    await client.query('COMMIT');
  };

  say(`inserting ${fmt(rows)} ledger rows in the current period of the second workspace...`);
  const started = performance.now();
  await client.query(
    `INSERT INTO credit_usage (workspace_id, user_id, kind, model, cost_usd, reference_id, created_at)
     SELECT $1::uuid, $2, 'chat', 'bench', 0.0000001, 'bulk-' || g, now() - make_interval(secs => g % 86400)
     FROM generate_series(1, $3) g`,
    [full.workspace, full.owner, rows],
  );
  await client.query('VACUUM ANALYZE credit_usage');
  await client.query('CHECKPOINT');
  say(`inserted in ${fmt((performance.now() - started) / 1000, 1)} s`);

  /** Latencies (ms) of sequential calls, and the app's statements per call. */
  const sequential = async (call: () => Promise<void>, count: number) => {
    const before = statements;
    const ms: number[] = [];
    for (let i = 0; i < count; i++) {
      const began = performance.now();
      await call();
      ms.push(performance.now() - began);
    }
    return { ms, statements: statements - before };
  };
  /** Seconds for `count` calls with `concurrency` in flight for the one workspace (the service's pool only). */
  const concurrent = async (call: () => Promise<void>, count: number) => {
    const began = performance.now();
    let left = count;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await call();
      }),
    );
    return (performance.now() - began) / 1000;
  };

  // The two ledgers alternate within each round (which goes first alternates too), so a change
  // in the machine's load meanwhile falls on both alike.
  const targets = [
    { label: 'empty ledger', current: current(empty), previous: previous(empty) },
    { label: `${fmt(rows)} ledger rows`, current: current(full), previous: previous(full) },
  ];
  const samples = targets.map(() => ({ current: [] as number[], previous: [] as number[], statements: 0, seconds: 0 }));
  for (const target of targets) for (let i = 0; i < 20; i++) await target.current();
  const perRound = Math.max(1, Math.floor(calls / ROUNDS));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const index of order) {
      const target = targets[index]!;
      const sample = samples[index]!;
      const measured = await sequential(target.current, perRound);
      sample.current.push(...measured.ms);
      sample.statements += measured.statements;
      sample.previous.push(...(await sequential(target.previous, Math.max(1, Math.floor(perRound / 3)))).ms);
      sample.seconds += await concurrent(target.current, perRound);
    }
  }
  const results = targets.map((target, index) => {
    const sample = samples[index]!;
    const currentSorted = ascending(sample.current);
    const previousSorted = ascending(sample.previous);
    const figures = {
      label: target.label,
      current: {
        p50: percentile(currentSorted, 50),
        p95: percentile(currentSorted, 95),
        perSecond: (perRound * ROUNDS) / sample.seconds,
        statements: sample.statements / sample.current.length,
      },
      previous: { p50: percentile(previousSorted, 50), p95: percentile(previousSorted, 95) },
    };
    say(
      `${target.label.padEnd(28)} current p50 ${fmt(figures.current.p50, 2)} ms, p95 ${fmt(figures.current.p95, 2)} ms, ${fmt(figures.current.perSecond)} calls/s at ${concurrency}, ` +
        `${fmt(figures.current.statements, 1)} statements  | previous p50 ${fmt(figures.previous.p50, 2)} ms, p95 ${fmt(figures.previous.p95, 2)} ms`,
    );
    return figures;
  });

  const loadAtEnd = loadAverage();
  const [none, many] = results as [(typeof results)[0], (typeof results)[0]];
  const change = (a: number, b: number) => `${b >= a ? '+' : ''}${fmt(((b - a) / a) * 100, 1)} %`;
  say(`current: p50 ${change(none.current.p50, many.current.p50)} with the rows; previous: p50 ${change(none.previous.p50, many.previous.p50)}`);
  if (!args['no-record']) {
    appendResults('credit gate (PostgreSQL)', [
      '`npm run bench:credit` (see bench/README.md).',
      '',
      machineLine(),
      `- database: ${database.label}; two workspaces on the free plan (the period is the lifetime), one with ${fmt(rows)} ledger rows in it`,
      `- load average ${loadAtStart} at the start, ${loadAtEnd} at the end`,
      `- ${ROUNDS} rounds, each measuring both workspaces in turn (the first alternating): ${perRound} sequential admit + settle (in-process service calls, the app's pool), ${Math.max(1, Math.floor(perRound / 3))} calls of the previous statements replayed on one connection (lock, SUM ledger, SUM reservations, insert; close, insert; without the billing state both read alike), then ${perRound} calls with ${concurrency} in flight for the one workspace; 20 warm-up calls each first; statements counted as the app issues them`,
      '',
      '| ledger | current p50 (ms) | current p95 (ms) | current calls/s at concurrency | statements per admit + settle | previous p50 (ms) | previous p95 (ms) |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...results.map(
        (r) =>
          `| ${r.label} | ${fmt(r.current.p50, 2)} | ${fmt(r.current.p95, 2)} | ${fmt(r.current.perSecond)} | ${fmt(r.current.statements, 1)} | ${fmt(r.previous.p50, 2)} | ${fmt(r.previous.p95, 2)} |`,
      ),
      '',
      `- with the rows, current p50 ${change(none.current.p50, many.current.p50)}, previous p50 ${change(none.previous.p50, many.previous.p50)}`,
    ]);
  }
} finally {
  stopCounting();
  await client.end();
  await deps.close();
  await database.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
