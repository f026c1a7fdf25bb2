/**
 * Usage analytics benchmark (PostgreSQL): `GET /api/workspaces/{id}/usage/` over a month of
 * 1,000,000 ledger rows of one workspace, for each `group_by`, through the real app over HTTP,
 * next to the same report computed straight from the ledger (one GROUP BY over `credit_usage`,
 * what the endpoint would run without the daily totals) in the same run.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:usage [-- --rows 1000000 --requests 30 --no-record]
 *
 * DATABASE_URL names the server: a fresh database is created there (migrated by the app) and
 * dropped afterwards. Rows are written with one `generate_series` INSERT (the daily totals follow
 * by the ledger's statement trigger). All traffic goes to 127.0.0.1. Results are printed and
 * appended to bench/RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { createDeps } from '../src/deps.js';
import { createLogger } from '../src/platform/logger.js';
import { appendResults, ascending, benchAppConfig, createBenchDatabase, fmt, loadAverage, machineLine, percentile, positiveInt } from './support.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: process.env.BENCH_ROWS ?? '1000000' },
    users: { type: 'string', default: process.env.BENCH_USERS ?? '20' },
    requests: { type: 'string', default: process.env.BENCH_REQUESTS ?? '30' },
    warmup: { type: 'string', default: process.env.BENCH_WARMUP ?? '3' },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
});
const rows = positiveInt('rows', args.rows);
const userCount = positiveInt('users', args.users);
const requests = positiveInt('requests', args.requests);
const warmup = positiveInt('warmup', args.warmup, 0);
const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) throw new Error('Set DATABASE_URL to a PostgreSQL server (with pgvector); the benchmark creates its own database there');

const say = (line: string) => process.stdout.write(`${line}\n`);
const MONTH = { from: '2026-10-01', to: '2026-10-31' };
const MONTH_START = '2026-10-01T00:00:00Z';
const MONTH_SECONDS = 31 * 86_400;
const groups = ['user', 'model', 'kind', 'day'] as const;

interface Case {
  label: string;
  query: string;
  /** The comparison: the same groups straight from the ledger. */
  ledgerKey: string;
}

const cases: Case[] = [
  ...groups.map((group) => ({
    label: `group_by=${group}`,
    query: `group_by=${group}&from=${MONTH.from}&to=${MONTH.to}`,
    ledgerKey: { user: 'coalesce(user_id, 0)::text', model: 'model', kind: 'kind', day: `to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')` }[group],
  })),
  {
    // Partial days at both ends: half a day of ledger rows each side, read from the ledger itself.
    label: 'group_by=model, instants (12:00 to 12:00)',
    query: `group_by=model&from=${MONTH.from}T12:00:00Z&to=${MONTH.to}T12:00:00Z`,
    ledgerKey: 'model',
  },
  { label: 'group_by=user, format=csv', query: `group_by=user&from=${MONTH.from}&to=${MONTH.to}&format=csv`, ledgerKey: 'coalesce(user_id, 0)::text' },
];

const summary = (ms: number[]) => {
  const sorted = ascending(ms);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
};

const loadAtStart = loadAverage();
const database = await createBenchDatabase(serverUrl, 'wsai_bench_usage');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-usage-'));
const config = benchAppConfig(database.url, dataDir);
const deps = await createDeps(config, createLogger(config.LOG_LEVEL));
const app = await buildApp(deps);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const client = new pg.Client({ connectionString: database.url });
await client.connect();

try {
  const post = async (url: string, body: unknown, token?: string) => {
    const res = await fetch(`${base}${url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const email = `owner-${randomBytes(4).toString('hex')}@bench.test`;
  const password = `pw-${randomBytes(12).toString('hex')}`;
  await post('/auth/users/', { email, password, name: 'Bench Owner' });
  const token = (await post('/auth/token/login/', { email, password })).auth_token as string;
  const workspaceId = (await post('/api/workspaces/', { name: 'Bench' }, token)).id as string;
  await client.query(
    `INSERT INTO users (email, name, password_hash) SELECT 'user' || g || '@bench.test', 'User ' || g, 'x' FROM generate_series(1, $1) g`,
    [userCount],
  );
  const { rows: ids } = await client.query<{ id: number }>('SELECT id FROM users ORDER BY id');
  const userIds = ids.map((r) => r.id);

  say(`inserting ${fmt(rows)} ledger rows over ${MONTH.from}..${MONTH.to} for one workspace (${userIds.length} users)...`);
  const insertStarted = performance.now();
  await client.query(
    `INSERT INTO credit_usage (workspace_id, user_id, kind, model, input_tokens, output_tokens, cost_usd, reference_id, created_at)
     SELECT $1::uuid, ($2::int[])[1 + g % array_length($2::int[], 1)],
       (ARRAY['chat', 'chat', 'chat', 'embedding', 'transcription', 'translation', 'ingestion'])[1 + g % 7],
       (ARRAY['gpt-4.1-mini', 'gpt-4.1', 'claude-sonnet-4-5', 'o3', 'text-embedding-3-small', 'whisper-1'])[1 + g % 6],
       100 + g % 900, g % 500, (g % 1000) / 100000.0, 'bench-' || g,
       $3::timestamptz + make_interval(secs => (g::float8 * $4) / $5)
     FROM generate_series(0, $5 - 1) g`,
    [workspaceId, userIds, MONTH_START, MONTH_SECONDS, rows],
  );
  const insertSeconds = (performance.now() - insertStarted) / 1000;
  await client.query('VACUUM ANALYZE credit_usage');
  await client.query('VACUUM ANALYZE credit_usage_daily');
  const { rows: sizes } = await client.query<{ ledger: string; daily: string }>(
    'SELECT (SELECT count(*) FROM credit_usage)::text AS ledger, (SELECT count(*) FROM credit_usage_daily)::text AS daily',
  );
  say(`inserted in ${fmt(insertSeconds, 1)} s; ledger ${fmt(Number(sizes[0]!.ledger))} rows, daily totals ${fmt(Number(sizes[0]!.daily))} rows`);

  const results: Array<{ label: string; groups: number; endpoint: { p50: number; p95: number }; ledger: { p50: number; p95: number } }> = [];
  for (const c of cases) {
    const url = `${base}/api/workspaces/${workspaceId}/usage/?${c.query}`;
    const timed = async () => {
      const started = performance.now();
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${c.label}: ${res.status} ${text}`);
      return { ms: performance.now() - started, text };
    };
    for (let i = 0; i < warmup; i++) await timed();
    const endpoint: number[] = [];
    let last = '';
    for (let i = 0; i < requests; i++) {
      const run = await timed();
      endpoint.push(run.ms);
      last = run.text;
    }
    const groupCount = c.query.includes('format=csv') ? last.trim().split('\r\n').length - 1 : (JSON.parse(last) as { count: number }).count;

    const [from, to] = c.query.includes('T12') ? [`${MONTH.from}T12:00:00Z`, `${MONTH.to}T12:00:00Z`] : [`${MONTH.from}T00:00:00Z`, '2026-11-01T00:00:00Z'];
    const ledgerSql = `SELECT ${c.ledgerKey} AS key, count(*), sum(input_tokens), sum(output_tokens), sum(cost_usd)
      FROM credit_usage WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY 1 ORDER BY 5 DESC LIMIT 50`;
    const ledgerRun = async () => {
      const started = performance.now();
      await client.query(ledgerSql, [workspaceId, from, to]);
      return performance.now() - started;
    };
    await ledgerRun();
    const ledger: number[] = [];
    for (let i = 0; i < Math.max(5, Math.ceil(requests / 3)); i++) ledger.push(await ledgerRun());
    const row = { label: c.label, groups: groupCount, endpoint: summary(endpoint), ledger: summary(ledger) };
    results.push(row);
    say(
      `${row.label.padEnd(44)} ${String(row.groups).padStart(4)} groups  endpoint p50 ${fmt(row.endpoint.p50, 1)} ms, p95 ${fmt(row.endpoint.p95, 1)} ms` +
        `  | ledger GROUP BY p50 ${fmt(row.ledger.p50, 1)} ms, p95 ${fmt(row.ledger.p95, 1)} ms`,
    );
  }

  const loadAtEnd = loadAverage();
  if (!args['no-record']) {
    appendResults('usage analytics (PostgreSQL)', [
      '`npm run bench:usage` (see bench/README.md).',
      '',
      machineLine(),
      `- database: ${database.label}; ${fmt(rows)} ledger rows of one workspace over ${MONTH.from}..${MONTH.to}, ${userIds.length} users, 6 models, 5 kinds; written in ${fmt(insertSeconds, 1)} s (one INSERT ... generate_series, daily totals by the statement trigger: ${fmt(Number(sizes[0]!.daily))} rows)`,
      `- load average ${loadAtStart} at the start, ${loadAtEnd} at the end`,
      `- endpoint: ${requests} sequential requests per case after ${warmup} warm-up, real app over HTTP (\`fetch\` to 127.0.0.1, owner's token, default page of 50); comparison: the same groups straight from the ledger (one GROUP BY over \`credit_usage\` with the (workspace_id, created_at) index, SQL only, no HTTP), ${Math.max(5, Math.ceil(requests / 3))} runs`,
      '',
      '| case | groups | endpoint p50 (ms) | endpoint p95 (ms) | ledger GROUP BY p50 (ms) | ledger GROUP BY p95 (ms) |',
      '|---|---:|---:|---:|---:|---:|',
      ...results.map(
        (r) => `| ${r.label} | ${r.groups} | ${fmt(r.endpoint.p50, 1)} | ${fmt(r.endpoint.p95, 1)} | ${fmt(r.ledger.p50, 1)} | ${fmt(r.ledger.p95, 1)} |`,
      ),
    ]);
  }
} finally {
  await client.end();
  await app.close();
  await deps.close();
  await database.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
