/**
 * Webhook benchmark: signed payment-provider events per second through the real route
 * (`POST /api/subscriptions/webhook`: signature check, validation, then the event's one statement:
 * ordering check, mirror write and inbox record), on PostgreSQL.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:webhook \
 *     [-- --events 5000 --concurrency 16 --warmup 10000 --rounds 1 --client undici|fetch --no-record]
 *
 * DATABASE_URL names the server only: the benchmark creates its own database
 * (`wsai_bench_webhook_<random>`) on it, migrates it, and drops it at the end, so it never
 * touches data you care about. Without DATABASE_URL it runs on a temporary embedded PGlite.
 *
 * Events are a mix of `customer.subscription.updated` (40 %, over 50 subscriptions, each on its
 * own workspace, with one item), `product.updated` (30 %, 20 products with plan and features) and
 * `price.updated` (30 %, 40 prices), each with its own id and an increasing `created`, signed just
 * before sending like the provider does. The client is a bounded pool of concurrent requests
 * on 127.0.0.1 in a child process of its own (bench/webhook-client.ts): `undici`'s `request` by
 * default, `--client fetch` for the global `fetch` (what entries before 2026-11-24 used; it costs
 * ~0.45 ms of CPU per request against ~0.13 ms). Entries before 2026-11-29T02:10Z ran the client
 * in the server's process (`--client-in-process` still does): our app then shared its main thread
 * with the client while a peer in its own process did not, and that thread was the bottleneck. A
 * second phase redelivers already processed events (the duplicate fast path), and a third sends
 * the same bodies and signatures to a bare Fastify route (JSON parse and answer: the floor of
 * the client and HTTP). The warm-up (10,000 events by default; 3,000 in entries before
 * 2026-11-29T06:00Z, 300 before 2026-11-24T17:00Z) lets V8 optimise the hot path, and PostgreSQL
 * settle its plans, as in a server that has been running: with 300, the measured 5,000 events ran
 * partly on unoptimised code (app CPU per event ~0.75 ms against ~0.52); with 3,000, four rounds of
 * 5,000 still went 0.68, 0.45, 0.42 and 0.49 ms (server) and 0.68, 0.46, 0.46, 0.51 (PostgreSQL).
 * Results are printed and appended to bench/RESULTS.md.
 *
 * CPU per event, over each phase: the server's process (this one for ours and the bare route,
 * every thread: process.cpuUsage; the peer's by --peer-pid), the client's, and the local
 * PostgreSQL's (every process named `postgres`, from /proc). With `--client-in-process` the
 * server's figure includes the client's.
 *
 * SQL statements are counted in-process on PostgreSQL (every `query` of a node-postgres client,
 * BEGIN/COMMIT/SAVEPOINT included): per event over the measured phase, and per event type in a
 * sequential probe afterwards (`--probe` new events of each type, one at a time).
 */
import { randomBytes } from 'node:crypto';
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { count } from 'drizzle-orm';
import Fastify from 'fastify';
import { type ChildMessage, type ClientKind, type ParentMessage, sendAll, type Signing } from './webhook-client.js';
import { buildApp } from '../src/app.js';
import { observeStatements } from '../src/db/client.js';
import { loadConfig } from '../src/config/env.js';
import { createDeps } from '../src/deps.js';
import { billingCustomers, webhookEvents } from '../src/modules/billing/billing.table.js';
import { insertUser } from '../src/modules/users/users.repo.js';
import { createLogger } from '../src/platform/logger.js';
import {
  appendResults,
  ascending,
  cpuSeconds,
  createBenchDatabase,
  fmt,
  listen,
  machine,
  median,
  percentile,
  positiveInt,
  postgresCpuBetween,
  postgresCpuSeconds,
  processCpuSeconds,
} from './support.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: process.env.BENCH_EVENTS ?? '5000' },
    concurrency: { type: 'string', default: process.env.BENCH_CONCURRENCY ?? '16' },
    warmup: { type: 'string', default: process.env.BENCH_WARMUP_EVENTS ?? '10000' },
    rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '1' },
    probe: { type: 'string', default: process.env.BENCH_PROBE_EVENTS ?? '50' },
    client: { type: 'string', default: process.env.BENCH_CLIENT ?? 'undici' },
    'peer-url': { type: 'string', default: process.env.BENCH_PEER_URL },
    'peer-secret': { type: 'string', default: process.env.BENCH_PEER_SECRET },
    'peer-header': { type: 'string', default: process.env.BENCH_PEER_HEADER ?? 'stripe-signature' },
    'peer-label': { type: 'string', default: process.env.BENCH_PEER_LABEL ?? 'peer' },
    'peer-pid': { type: 'string', default: process.env.BENCH_PEER_PID },
    'client-in-process': { type: 'boolean', default: process.env.BENCH_CLIENT_IN_PROCESS === '1' },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
  allowPositionals: false,
});

const totalEvents = positiveInt('events', args.events);
const concurrency = positiveInt('concurrency', args.concurrency);
const warmupEvents = positiveInt('warmup', args.warmup, 0);
/** Measured rounds of new events; with a peer, each round sends to both, in alternating order. */
const rounds = positiveInt('rounds', args.rounds);
const probeEvents = positiveInt('probe', args.probe, 0);
if (args.client !== 'undici' && args.client !== 'fetch') throw new Error(`--client must be undici or fetch (got ${args.client})`);
const client: ClientKind = args.client;
const clientInProcess = args['client-in-process'];
/** Another implementation of the same webhook, sent the same events in the same run (bench/README.md). */
const peer = args['peer-url']
  ? {
      url: args['peer-url'],
      signing: { secret: args['peer-secret'] ?? '', header: args['peer-header']! },
      label: args['peer-label']!,
      pid: args['peer-pid'] ? positiveInt('peer-pid', args['peer-pid']) : undefined,
    }
  : undefined;
if (peer && !peer.signing.secret) throw new Error('--peer-url needs --peer-secret (the peer\'s webhook signing secret)');

/** Statements the app issues (either profile). */
const statements = { total: 0, byKind: new Map<string, number>() };
observeStatements((text) => {
  statements.total += 1;
  const kind = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? '?';
  statements.byKind.set(kind, (statements.byKind.get(kind) ?? 0) + 1);
});
const countStatements = () => {
  const total = statements.total;
  const kinds = new Map(statements.byKind);
  return () => {
    const delta = Object.fromEntries([...statements.byKind].map(([k, n]) => [k, n - (kinds.get(k) ?? 0)]).filter(([, n]) => Number(n) > 0));
    return { total: statements.total - total, kinds: delta as Record<string, number> };
  };
};

const bare = Fastify({ logger: false });
bare.removeContentTypeParser('application/json');
bare.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
bare.post('/bare', async (request) => {
  const event = JSON.parse((request.body as Buffer).toString('utf8')) as { id: string };
  return { received: true, id: event.id };
});

const SUBSCRIPTIONS = 50;
const PRODUCTS = 20;
const PRICES = 40;
const secret = `whsec_bench_${randomBytes(16).toString('hex')}`;
/** How a body is signed: our service's secret and header, or the peer's. */
const ours: Signing = { secret, header: 'payment-signature' };

interface Fixture {
  customer: string;
  workspaces: string[];
}

/** Event `index` of the mix, with `created` = base + index so every one is the newest for its object. */
function makeEvent(index: number, base: number, fixture: Fixture): Record<string, unknown> {
  const created = base + index;
  const id = `evt_bench_${index}_${randomBytes(3).toString('hex')}`;
  const slot = index % 10;
  let type: string;
  let object: Record<string, unknown>;
  if (slot < 4) {
    const s = index % SUBSCRIPTIONS;
    const price = `price_bench_${s % PRICES}`;
    type = 'customer.subscription.updated';
    object = {
      id: `sub_bench_${s}`,
      object: 'subscription',
      customer: fixture.customer,
      status: index % 7 === 0 ? 'past_due' : 'active',
      current_period_start: base - 86400,
      current_period_end: base + 29 * 86400,
      billing_cycle_anchor: base - 86400,
      trial_start: null,
      trial_end: null,
      cancel_at: null,
      cancel_at_period_end: index % 5 === 0,
      canceled_at: null,
      ended_at: null,
      metadata: { workspace_id: fixture.workspaces[s] },
      items: { object: 'list', data: [{ id: `si_bench_${s}`, price: { id: price, product: `prod_bench_${(s % PRICES) % PRODUCTS}` }, quantity: 1 }] },
    };
  } else if (slot < 7) {
    const p = index % PRODUCTS;
    type = 'product.updated';
    object = {
      id: `prod_bench_${p}`,
      object: 'product',
      name: `Product ${p} v${index}`,
      active: true,
      metadata: { plan: ['pro', 'team', 'business'][p % 3]!, features: `chat kb f${index % 5} f${(index + 1) % 5}` },
    };
  } else {
    const p = index % PRICES;
    type = 'price.updated';
    object = {
      id: `price_bench_${p}`,
      object: 'price',
      product: `prod_bench_${p % PRODUCTS}`,
      active: true,
      currency: 'usd',
      unit_amount: 1000 + (index % 9) * 100,
      recurring: { interval: p % 2 ? 'year' : 'month', interval_count: 1 },
    };
  }
  return { id, object: 'event', type, created, api_version: '2026-10-28.endive', livemode: false, data: { object } };
}

interface PhaseResult {
  label: string;
  events: number;
  seconds: number;
  latencies: number[];
  statuses: Record<number, number>;
  /** SQL statements sent during the phase (PostgreSQL only). */
  statements?: number;
  /** CPU seconds of this process (the server, and the client with --client-in-process) and of the local PostgreSQL's processes (null: not local). */
  appCpu: number;
  postgresCpu: number | null;
  /** CPU seconds of the client's process (null: the client ran in this one). */
  clientCpu: number | null;
  /** CPU seconds of the peer's process (`--peer-pid`), for its phase. */
  peerCpu?: number;
}

/** The client process (bench/webhook-client.ts); undefined with --client-in-process. */
let clientProcess: { child: ChildProcess; request(message: ParentMessage): Promise<ChildMessage> } | undefined;

function startClientProcess(): NonNullable<typeof clientProcess> {
  const child = fork(fileURLToPath(new URL('./webhook-client.ts', import.meta.url)), [], {
    execArgv: process.execArgv,
    env: { ...process.env, BENCH_WEBHOOK_CLIENT: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let pending: { resolve(message: ChildMessage): void; reject(error: Error): void } | undefined;
  child.on('message', (message: ChildMessage) => {
    const waiting = pending;
    pending = undefined;
    if (message.type === 'error') waiting?.reject(new Error(`client process failed:\n${message.message}`));
    else waiting?.resolve(message);
  });
  child.on('exit', (code) => pending?.reject(new Error(`client process exited (code ${code})`)));
  return {
    child,
    // One request at a time: every phase waits for its answer before the next begins.
    request: (message) =>
      new Promise((resolve, reject) => {
        pending = { resolve, reject };
        child.send(message);
      }),
  };
}

/** Sends every body (signed at send time) with at most `concurrency` requests in flight. */
async function run(label: string, url: string, bodies: string[], inFlight = concurrency, signing = ours, peerPid?: number): Promise<PhaseResult> {
  const options = { url, concurrency: inFlight, signing, client };
  // The bodies reach the client process before the phase's clocks start.
  if (clientProcess) await clientProcess.request({ type: 'load', bodies });
  const counted = countStatements();
  const appCpuBefore = processCpuSeconds();
  const postgresCpuBefore = postgresCpuSeconds();
  const peerCpuBefore = peerPid === undefined ? undefined : cpuSeconds(peerPid);
  let sent: { latencies: number[]; statuses: Record<number, number>; seconds: number; clientCpu: number | null };
  if (clientProcess) {
    const answer = await clientProcess.request({ type: 'run', ...options });
    if (answer.type !== 'ran') throw new Error(`unexpected answer from the client process: ${answer.type}`);
    sent = { ...answer, clientCpu: answer.cpuSeconds };
  } else {
    sent = { ...(await sendAll(bodies, options)), clientCpu: null };
  }
  const postgresCpuAfter = postgresCpuSeconds();
  return {
    label,
    events: bodies.length,
    seconds: sent.seconds,
    latencies: sent.latencies,
    statuses: sent.statuses,
    statements: signing === ours ? counted().total : undefined,
    appCpu: processCpuSeconds() - appCpuBefore,
    clientCpu: sent.clientCpu,
    postgresCpu: postgresCpuBetween(postgresCpuBefore, postgresCpuAfter),
    ...(peerCpuBefore === undefined ? {} : { peerCpu: cpuSeconds(peerPid!) - peerCpuBefore }),
  };
}


function table(results: PhaseResult[]): string {
  const lines = [
    `| phase | events | events/s | latency p50 (ms) | latency p99 (ms) | SQL statements / event | CPU / event, server process${clientInProcess ? ' incl. client' : ''} (ms) | CPU / event, client process (ms) | CPU / event, PostgreSQL (ms) | statuses |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of results) {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    lines.push(
      `| ${r.label} | ${fmt(r.events)} | ${fmt(r.events / r.seconds)} | ${fmt(percentile(sorted, 50), 1)} | ${fmt(percentile(sorted, 99), 1)} | ` +
        `${statementsCounted && r.statements !== undefined ? fmt(r.statements / r.events, 2) : 'n/a'} | ` +
        `${r.peerCpu === undefined ? fmt((1000 * r.appCpu) / r.events, 3) : `${fmt((1000 * r.peerCpu) / r.events, 3)} (the peer's)`} | ` +
        `${r.clientCpu === null ? 'in the server' : fmt((1000 * r.clientCpu) / r.events, 3)} | ${r.postgresCpu === null || !statementsCounted ? 'n/a' : fmt((1000 * r.postgresCpu) / r.events, 3)} | ` +
        `${Object.entries(r.statuses).map(([s, n]) => `${s}: ${n}`).join(', ')} |`,
    );
  }
  return lines.join('\n');
}

/** Statement counts are reported for PostgreSQL runs (the figure issue 14 sets is per event on PostgreSQL). */
let statementsCounted = false;

/** Sequential new events of one type each, with the statements each type costs. */
async function probe(url: string, base: number, fixture: Fixture, from: number): Promise<string[]> {
  if (!statementsCounted || probeEvents === 0) return [];
  const lines: string[] = [];
  for (const [slot, label] of [[0, 'customer.subscription.updated'], [4, 'product.updated'], [7, 'price.updated']] as const) {
    const bodies = Array.from({ length: probeEvents }, (_, k) => JSON.stringify(makeEvent(from + 10 * k + slot, base, fixture)));
    const counted = countStatements();
    const r = await run(`probe ${label}`, url, bodies, 1);
    const { total, kinds } = counted();
    if (Object.keys(r.statuses).some((s) => s !== '200')) throw new Error(`probe ${label}: ${JSON.stringify(r.statuses)}`);
    const perKind = Object.entries(kinds)
      .sort(([, a], [, b]) => b - a)
      .map(([k, n]) => `${k} ${fmt(n / probeEvents, 2)}`)
      .join(', ');
    lines.push(`\`${label}\`: ${fmt(total / probeEvents, 2)} statements per event (${perKind})`);
  }
  return lines;
}

function record(results: PhaseResult[], summary: string[], database: string, outcomes: string, poolSize: number, loadBefore: string, perType: string[]): void {
  const m = machine();
  appendResults('webhook', [
    '`npm run bench:webhook`: signed events through `POST /api/subscriptions/webhook` (signature',
    'check, validation, and the event applied and recorded in the inbox). Mix: 40 % subscription updates (50',
    'subscriptions on 50 workspaces), 30 % product updates (20 products, plan + features sync), 30 % price',
    `updates (40 prices); a bounded pool of requests (${client === 'fetch' ? '`fetch`' : "undici's `request`"}) ${clientInProcess ? "in the server's process" : 'in a process of its own'} on 127.0.0.1, after a warm-up.`,
    '"redelivery" resends already processed events (acknowledged from the inbox, nothing applied); "bare Fastify" sends the same',
    "bodies and signatures to a bare Fastify route (JSON parse, answer) in the benchmark's process. CPU per event: the server's process",
    `(every thread${clientInProcess ? '; the client included' : ''}), the client's, and the local PostgreSQL's processes, over the phase.`,
    '',
    `- machine: ${m.cpus} CPUs (nproc), ${m.cpu}, ${m.memory} RAM, ${m.os}`,
    `- Node ${m.node}; database: ${database}; 1-minute load average ${loadBefore} before the run, ${os.loadavg()[0]!.toFixed(2)} after`,
    `- settings: ${concurrency} concurrent requests, ${warmupEvents} warm-up events, ${poolSize} database connections (DATABASE_POOL_SIZE)`,
    `- inbox outcomes: ${outcomes}`,
    ...(peer
      ? [
          `- peer: ${peer.label} at ${peer.url}, sent the same warm-up (after ours) and new-event bodies, signed with its own secret in \`${peer.signing.header}\` (its database emptied beforehand); ${rounds > 1 ? `${rounds} rounds, each new-event phase sent to both in turn (ours first in odd rounds, the peer first in even ones); ` : 'its new events right after ours; '}its row's CPU is the peer process's${peer.pid ? '' : ' (not measured: no --peer-pid)'}, PostgreSQL's is the same server's`,
        ]
      : []),
    ...(perType.length
      ? [`- SQL statements (node-postgres \`query\` calls, BEGIN/COMMIT included), ${probeEvents} sequential new events of each type after the run:`, ...perType.map((l) => `  - ${l}`)]
      : []),
    '',
    table(results),
    ...(summary.length ? ['', ...summary] : []),
  ]);
}

/** Per service, the rounds' events/s and their median; with a peer, ours over the peer's per round. */
function roundsSummary(ourRounds: PhaseResult[], peerRounds: PhaseResult[]): string[] {
  const rate = (r: PhaseResult) => r.events / r.seconds;
  const lines = [`- ours, new events over ${ourRounds.length} rounds: ${ourRounds.map((r) => fmt(rate(r), 0)).join(', ')} events/s; median ${fmt(median(ascending(ourRounds.map(rate))), 0)}`];
  if (peer) {
    lines.push(
      `- ${peer.label}: ${peerRounds.map((r) => fmt(rate(r), 0)).join(', ')} events/s; median ${fmt(median(ascending(peerRounds.map(rate))), 0)}`,
      `- ours / ${peer.label}, per round: ${ourRounds.map((r, i) => `${fmt(rate(r) / rate(peerRounds[i]!), 2)}×`).join(', ')}`,
    );
  }
  return lines;
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!.toFixed(2);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-webhook-'));
  const bench = process.env.DATABASE_URL ? await createBenchDatabase(process.env.DATABASE_URL, 'wsai_bench_webhook') : undefined;
  statementsCounted = Boolean(bench);
  const database = bench?.label ?? 'PGlite (embedded, temporary directory)';
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: bench?.url ?? '',
    REDIS_URL: '',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    SECRET_KEY: randomBytes(32).toString('hex'),
    PAYMENT_WEBHOOK_SECRET: secret,
  });
  process.stdout.write(`starting the app on ${database} (migrations run on start-up)...\n`);
  const deps = await createDeps(config, createLogger('silent'));
  const app = await buildApp(deps);
  clientProcess = clientInProcess ? undefined : startClientProcess();
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('server has no TCP address');
    const url = `http://127.0.0.1:${address.port}/api/subscriptions/webhook`;

    // One paying user with a customer account record, and a workspace per subscription.
    const db = deps.database.db;
    const user = await insertUser(db, { email: `bench-${Date.now()}@example.com`, name: 'Bench', passwordHash: 'x' });
    const customer = `cus_bench_${user!.id}`;
    await db.insert(billingCustomers).values({ providerCustomerId: customer, userId: user!.id });
    const workspaces: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) workspaces.push((await deps.services.workspaces.create(user!.id, `Bench ${i}`)).id);
    const fixture = { customer, workspaces };

    const measuredEvents = rounds * totalEvents;
    const base = Math.floor(Date.now() / 1000) - 10 * (measuredEvents + warmupEvents);
    const bodies = Array.from({ length: warmupEvents + measuredEvents }, (_, i) => JSON.stringify(makeEvent(i, base, fixture)));
    process.stdout.write(
      `warm-up: ${warmupEvents} events; measured: ${rounds > 1 ? `${rounds} rounds of ` : ''}${totalEvents} events, ${concurrency} concurrent (${client} client, ${clientInProcess ? "in the server's process" : 'in its own process'})...\n`,
    );
    // The peer gets the same bodies with its own signature, warmed up alike (its database must
    // start without these objects' rows: an event older than the stored row changes nothing there).
    if (warmupEvents) await run('warm-up', url, bodies.slice(0, warmupEvents));
    if (peer && warmupEvents) await run(`warm-up (${peer.label})`, peer.url, bodies.slice(0, warmupEvents), concurrency, peer.signing);
    const freshResults: PhaseResult[] = [];
    const peerResults: PhaseResult[] = [];
    for (let round = 0; round < rounds; round++) {
      const slice = bodies.slice(warmupEvents + round * totalEvents, warmupEvents + (round + 1) * totalEvents);
      const suffix = rounds > 1 ? ` (round ${round + 1})` : '';
      const sendOurs = async () => freshResults.push(await run(`new events${suffix}`, url, slice));
      const sendPeer = async () => {
        if (peer) peerResults.push(await run(`${peer.label}: new events${suffix}`, peer.url, slice, concurrency, peer.signing, peer.pid));
      };
      // Alternating who goes first, so neither always meets the state the other left (a warm cache, a busy autovacuum).
      if (round % 2 === 0) {
        await sendOurs();
        await sendPeer();
      } else {
        await sendPeer();
        await sendOurs();
      }
    }
    const redelivery = await run('redelivery', url, bodies.slice(warmupEvents, warmupEvents + Math.min(totalEvents, 1000)));
    // The floor: the same client, bodies and signatures against a bare Fastify route that parses
    // the JSON and answers like the app does (no signature check, no database).
    const bareUrl = `${await listen(bare)}/bare`;
    await run('warm-up (bare)', bareUrl, bodies.slice(0, warmupEvents));
    const floor = await run('bare Fastify', bareUrl, bodies.slice(warmupEvents));
    const perType = await probe(url, base, fixture, Math.ceil((warmupEvents + measuredEvents) / 10) * 10);

    const expected = warmupEvents + measuredEvents + (perType.length ? 3 * probeEvents : 0);
    const rows = await db.select({ outcome: webhookEvents.outcome, n: count() }).from(webhookEvents).groupBy(webhookEvents.outcome);
    const outcomes = rows.map((r) => `${r.outcome} ${r.n}`).join(', ');
    const [{ n } = { n: 0 }] = await db.select({ n: count() }).from(webhookEvents);

    const m = machine();
    const results = [...freshResults, redelivery, ...peerResults, floor];
    const summary = rounds > 1 ? roundsSummary(freshResults, peerResults) : [];
    process.stdout.write(`\n${m.cpus} CPUs, ${m.cpu}, Node ${m.node}; ${database}\ninbox: ${n} events (${outcomes})\n\n${table(results)}\n\n${summary.map((l) => `${l}\n`).join('')}${summary.length ? '\n' : ''}${perType.map((l) => `${l}\n`).join('')}\n`);
    const failures = results.filter((r) => Object.keys(r.statuses).some((s) => s !== '200'));
    if (n !== expected) process.stdout.write(`warning: the inbox holds ${n} events, expected ${expected}\n`);
    if (args['no-record']) process.stdout.write('not recorded (--no-record)\n');
    else record(results, summary, database, outcomes, config.DATABASE_POOL_SIZE, loadBefore, perType);
    if (failures.length || n !== expected) process.exitCode = 1;
  } finally {
    await app.close();
    await bare.close();
    await deps.close();
    await bench?.drop();
    clientProcess?.child.disconnect();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
