/**
 * Streaming benchmark: (a) the service's time-to-first-delta overhead on a streamed send, and
 * (b) the app process's memory with 1,000 concurrent streams open.
 *
 *   npm run bench:stream [-- --sends 200 --streams 1000 --chunk-delay-ms 1500 --no-record]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:stream
 *
 * This process runs only the real app (createDeps + buildApp, logging silent) on 127.0.0.1: an
 * embedded PGlite in a temporary directory, or — with DATABASE_URL, which names the server
 * only — a fresh database `wsai_bench_stream_<random>` created on it and dropped at the end.
 * A child process (bench/stream-client.ts) runs the fake model server the app's providers point
 * at and every client, so the memory measured here is the app's. `npm run bench:stream` starts
 * Node with --expose-gc so memory is also sampled after a full collection.
 *
 * (a) N sequential streamed sends (POST .../messages/stream/, after a warm-up), each paired with
 *     the same streaming chat completion sent straight to the fake and with a send through a bare
 *     Fastify proxy in this process (a route that opens the event stream, posts the completion
 *     to the fake with undici and forwards each content chunk as `event: delta`: no auth, no
 *     database, no AI SDK; the floor of an HTTP service in front of the model on this machine):
 *     client-observed ms from the request start to the first `event: delta` (service, proxy) and
 *     to the first content chunk (fake); the overhead is the difference per triple.
 *     The database's statistics are updated (ANALYZE) after the warm-up, as autovacuum keeps a
 *     long-running database's, so the measured sends run on plans made for tables that are not empty.
 * (b) M concurrent streamed sends whose fake replies are slow (`--chunks` chunks `--chunk-delay-ms`
 *     apart); once every stream has its first delta, the app's memory is sampled; then every
 *     stream must end with `event: done`. Each stream's wait is split in two: request → the fake
 *     receiving its model call (admission), and the fake's own first chunk → the first delta.
 * Results are printed and appended to bench/RESULTS.md.
 */
import { type ChildProcess, fork } from 'node:child_process';
import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type EventLoopUtilization, monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import Fastify, { type FastifyReply } from 'fastify';
import { type Dispatcher, getGlobalDispatcher, request, setGlobalDispatcher } from 'undici';
import { createOpenAI } from '@ai-sdk/openai';
import { buildApp } from '../src/app.js';
import { observeStatements } from '../src/db/client.js';
import { createDeps } from '../src/deps.js';
import { LISTEN_BACKLOG } from '../src/platform/listen.js';
import { currentRequestContext } from '../src/platform/request-context.js';
import { createLogger } from '../src/platform/logger.js';
import { streamPlainText } from '../src/modules/agents/model-stream.js';
import { providerFetch } from '../src/modules/models/provider-fetch.js';
import type { BareBurstReport, ChildMessage, FinishedReport, OpenedReport, ParentMessage, StreamBenchOptions, TtfdSample } from './stream-client.js';
import {
  appendResults,
  ascending,
  createBenchDatabase,
  fmt,
  loadAverage,
  machine,
  machineLine,
  mean,
  mib,
  percentile,
  positiveInt,
  fakeModelBenchConfig,
} from './support.js';

const { values: args } = parseArgs({
  options: {
    sends: { type: 'string', default: process.env.BENCH_SENDS ?? '200' },
    warmup: { type: 'string', default: process.env.BENCH_WARMUP_SENDS ?? '20' },
    turns: { type: 'string', default: process.env.BENCH_TURNS_PER_CHAT ?? '10' },
    streams: { type: 'string', default: process.env.BENCH_STREAMS ?? '1000' },
    users: { type: 'string', default: process.env.BENCH_USERS ?? '10' },
    'chats-per-user': { type: 'string', default: process.env.BENCH_CHATS_PER_USER ?? '10' },
    chunks: { type: 'string', default: process.env.BENCH_CHUNKS ?? '20' },
    'chunk-delay-ms': { type: 'string', default: process.env.BENCH_CHUNK_DELAY_MS ?? '15000' },
    'max-pending': { type: 'string', default: process.env.BENCH_MAX_PENDING ?? '0' },
    'skip-ttfd': { type: 'boolean', default: false },
    'skip-memory': { type: 'boolean', default: false },
    'fake-apart': { type: 'boolean', default: false },
    'cpu-profile': { type: 'string' },
    'heap-profile': { type: 'string' },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
  allowPositionals: false,
});

const options: StreamBenchOptions = {
  sends: positiveInt('sends', args.sends),
  warmup: positiveInt('warmup', args.warmup, 0),
  turnsPerChat: positiveInt('turns', args.turns),
  streams: positiveInt('streams', args.streams),
  users: positiveInt('users', args.users),
  chatsPerUser: positiveInt('chats-per-user', args['chats-per-user']),
  chunks: positiveInt('chunks', args.chunks),
  chunkDelayMs: positiveInt('chunk-delay-ms', args['chunk-delay-ms'], 0),
  maxPending: positiveInt('max-pending', args['max-pending'], 0),
  skipTtfd: args['skip-ttfd'],
  skipMemory: args['skip-memory'],
  fakeApart: args['fake-apart'],
};
// Phase (b) times the fake's own events (a call received, a first chunk written) in the clients' process.
if (options.fakeApart && !options.skipMemory) throw new Error('--fake-apart measures phase (a) only: give --skip-memory too');

const gc = (globalThis as { gc?: () => void }).gc;

interface MemorySample {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

async function memory(collect: boolean): Promise<MemorySample> {
  if (collect && gc) {
    gc();
    await sleep(100);
    gc();
  }
  const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapTotal, heapUsed, external, arrayBuffers };
}

/** One streamed send's SQL statements: issued before its model call left, and after. */
interface SendStatements {
  before: number;
  after: number;
}

/**
 * Counts the statements of each streamed send of (a), split at its model call (issue 14 item 3:
 * at most 8 before it), in this process. A statement belongs to the HTTP request whose context
 * issues it (platform/request-context.ts; background work and job runs, which have no access
 * cache in theirs, are left out); it counts as before the model call until that request's call
 * leaves for the fake (undici's `undici:request:create` diagnostics channel, published in the
 * caller's context), then as after it (the reply, the charge, the chat's activity). The requests
 * that called the model are the sends; the bare proxy's calls run outside any request context.
 */
function startSendStatementCount(modelOrigin: string) {
  const requests = new Map<string, SendStatements & { modelCalled: boolean }>();
  const requestOf = () => {
    const context = currentRequestContext();
    if (!context?.accessCache) return undefined;
    let entry = requests.get(context.requestId);
    if (!entry) requests.set(context.requestId, (entry = { before: 0, after: 0, modelCalled: false }));
    return entry;
  };
  const onModelCall = (message: unknown) => {
    if ((message as { request: { origin?: string } }).request.origin !== modelOrigin) return;
    const entry = requestOf();
    if (entry) entry.modelCalled = true;
  };
  diagnosticsChannel.subscribe('undici:request:create', onModelCall);
  const stopObserving = observeStatements(() => {
    const entry = requestOf();
    if (!entry) return;
    if (entry.modelCalled) entry.after++;
    else entry.before++;
  });
  return {
    /** The sends counted; the last one's statements after its reply are given time to run. */
    async stop(): Promise<SendStatements[]> {
      await sleep(500);
      stopObserving();
      diagnosticsChannel.unsubscribe('undici:request:create', onModelCall);
      return [...requests.values()].filter((entry) => entry.modelCalled).map(({ before, after }) => ({ before, after }));
    },
  };
}

/** "mean m (min a, max b)" of one side of the counted sends. */
function statementSummary(sends: SendStatements[], side: keyof SendStatements): string {
  const values = sends.map((send) => send[side]);
  return `${fmt(mean(values), 2)} (min ${Math.min(...values)}, max ${Math.max(...values)})`;
}

/** The statement line of (a). */
function statementsLine(sends: SendStatements[]): string {
  if (!sends.length) return '- SQL statements per send: none counted';
  return (
    `- SQL statements per send (${sends.length} sends, counted in the app): before the model call ${statementSummary(sends, 'before')}, ` +
    `after it ${statementSummary(sends, 'after')}`
  );
}

/**
 * A V8 profile of this process (the app) through the inspector, from `begin` until `stop` writes
 * it where it is told: (b)'s burst alone, after the warm-up, which `node --cpu-prof` cannot cut out.
 */
async function startProfile(what: string, begin: (session: Session) => Promise<void>, end: (session: Session) => Promise<object>) {
  const session = new Session();
  session.connect();
  await begin(session);
  return {
    async stop(file: string) {
      writeFileSync(file, JSON.stringify(await end(session)));
      session.disconnect();
      console.log(`(b) ${what} of the burst written to ${file}`);
    },
  };
}

/** A CPU profile (sampled every 0.5 ms). */
const startCpuProfile = () =>
  startProfile(
    'CPU profile',
    async (session) => {
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 500 });
      await session.post('Profiler.start');
    },
    async (session) => (await session.post('Profiler.stop')).profile,
  );

/**
 * A sampling heap profile: every allocation sampled, including the objects collected since (what
 * the burst allocates, not what it keeps).
 */
const startHeapProfile = () =>
  startProfile(
    'heap allocation profile',
    async (session) => {
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    },
    async (session) => (await session.post('HeapProfiler.stopSampling')).profile,
  );

/** This process's event-loop utilisation and CPU, sampled at `at`. */
interface TimelineSample {
  at: number;
  elu: EventLoopUtilization;
  cpu: NodeJS.CpuUsage;
}

/** Samples this process's event-loop utilisation and CPU every 50 ms until `stop`. */
function startTimeline() {
  const timeline: TimelineSample[] = [];
  const sample = () => timeline.push({ at: performance.now(), elu: performance.eventLoopUtilization(), cpu: process.cpuUsage() });
  sample();
  const sampler = setInterval(sample, 50);
  return {
    stop() {
      clearInterval(sampler);
      return timeline;
    },
  };
}

/**
 * Event-loop utilisation and CPU of this process from the first timeline sample to the first
 * sample at or after `windowMs` past it (samples are ~50 ms apart, later when the loop is busy),
 * so the span covers the window; undefined when no such sample exists.
 */
function admissionWindow(
  timeline: TimelineSample[],
  windowMs: number | undefined,
): { ms: number; elu: number; cpuMs: number } | undefined {
  const first = timeline[0];
  if (windowMs === undefined || !first) return undefined;
  const end = timeline.find((sample) => sample !== first && sample.at - first.at >= windowMs);
  if (!end) return undefined;
  const cpu = { user: end.cpu.user - first.cpu.user, system: end.cpu.system - first.cpu.system };
  return { ms: end.at - first.at, elu: performance.eventLoopUtilization(end.elu, first.elu).utilization, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** The kernel's count of connections dropped from full listen queues (Linux, system-wide), if readable. */
function listenOverflows(): number | undefined {
  try {
    const [names, values] = readFileSync('/proc/net/netstat', 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('TcpExt:'))
      .map((line) => line.trim().split(/\s+/));
    const index = names?.indexOf('ListenOverflows') ?? -1;
    return index > 0 ? Number(values?.[index]) : undefined;
  } catch {
    return undefined;
  }
}

/** Messages from the child, awaited by type; a child error or exit rejects every wait. */
function childChannel(child: ChildProcess) {
  const inbox: ChildMessage[] = [];
  let failure: Error | undefined;
  let wake: () => void = () => undefined;
  child.on('message', (message: ChildMessage) => {
    if (message.type === 'error') failure = new Error(`client process failed:\n${message.message}`);
    else inbox.push(message);
    wake();
  });
  child.on('exit', (code) => {
    failure ??= new Error(`client process exited (code ${code}) before sending what was expected`);
    wake();
  });
  return {
    async next<T extends ChildMessage['type']>(type: T, timeoutMs: number): Promise<Extract<ChildMessage, { type: T }>> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const index = inbox.findIndex((m) => m.type === type);
        if (index !== -1) return inbox.splice(index, 1)[0] as Extract<ChildMessage, { type: T }>;
        if (failure) throw failure;
        if (Date.now() > deadline) throw new Error(`no "${type}" message from the client process within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 500).unref();
        });
      }
    },
    send(message: ParentMessage) {
      child.send(message);
    },
  };
}

/**
 * The bare Fastify proxy of phase (a): POST {content} opens an event stream, posts the streaming
 * completion to the fake (one user message) and forwards each content chunk as `event: delta`.
 * A second route, used by (b)'s floors only, makes the same call through the app's provider path
 * (the AI SDK's OpenAI client over providerFetch, read by streamPlainText): what the SDK adds.
 */
async function startBareProxy(openaiBaseUrl: string, apiKey: string) {
  const bare = Fastify({ logger: false });
  /** Takes the reply over as an event stream: a `delta` per text, `done` at the end. */
  const openEvents = (reply: FastifyReply) => {
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    raw.flushHeaders();
    return {
      delta: (text: string) => raw.write(`event: delta\ndata: ${JSON.stringify({ text })}\n\n`),
      done: () => raw.end('event: done\ndata: {}\n\n'),
    };
  };
  // Its CPU, so the app's CPU per send can leave it out (the sends run one at a time).
  let cpuMicros = 0;
  bare.post('/bare/stream', async (req, reply) => {
    const cpuAtStart = process.cpuUsage();
    const { content } = req.body as { content: string };
    const events = openEvents(reply);
    const upstream = await request(`${openaiBaseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ model: 'gpt-4.1-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content }] }),
    });
    let pending = '';
    upstream.body.setEncoding('utf8');
    for await (const chunk of upstream.body as AsyncIterable<string>) {
      pending += chunk;
      for (let end = pending.indexOf('\n\n'); end !== -1; end = pending.indexOf('\n\n')) {
        const frame = pending.slice(0, end);
        pending = pending.slice(end + 2);
        const data = frame.startsWith('data: ') ? frame.slice(6) : '';
        if (!data || data === '[DONE]') continue;
        const text = (JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content;
        if (text) events.delta(text);
      }
    }
    events.done();
    const cpu = process.cpuUsage(cpuAtStart);
    cpuMicros += cpu.user + cpu.system;
  });
  const model = createOpenAI({ baseURL: openaiBaseUrl, apiKey, fetch: providerFetch }).chat('gpt-4.1-mini');
  bare.post('/bare/sdk-stream', async (req, reply) => {
    const { content } = req.body as { content: string };
    const events = openEvents(reply);
    await streamPlainText({
      model,
      system: undefined,
      messages: [{ role: 'user', content }],
      call: { settings: { maxOutputTokens: 4096 }, providerOptions: {}, dropped: [] },
      abortSignal: new AbortController().signal,
      onText: events.delta,
    });
    events.done();
  });
  await bare.listen({ host: '127.0.0.1', port: 0, backlog: LISTEN_BACKLOG });
  const address = bare.server.address();
  if (!address || typeof address === 'string') throw new Error('bare proxy has no TCP address');
  const base = `http://127.0.0.1:${address.port}`;
  return { close: () => bare.close(), url: `${base}/bare/stream`, sdkUrl: `${base}/bare/sdk-stream`, cpuMs: () => cpuMicros / 1000 };
}

/**
 * Drops the connections to the fake that the burst before left idle: the app's burst opened one per
 * stream, so a floor's burst must too, or it measures reused connections against new ones. The
 * global dispatcher (the app's provider calls and both proxy routes use it) is replaced by a new
 * one of the same class, and the old one closed.
 */
async function freshProviderConnections(): Promise<void> {
  const old = getGlobalDispatcher();
  setGlobalDispatcher(new (old.constructor as new () => Dispatcher)());
  await old.close();
}

/** (b)'s comparisons: the same burst through the bare Fastify proxy of (a), without and with the AI SDK. */
function floorLine(label: string, through: string, burst: BareBurstReport, cut: { ms: number; elu: number; cpuMs: number } | undefined): string {
  const afterModel = ascending(burst.afterModelFirstChunkMs);
  return (
    `- ${label} ${options.streams} streams sent at once through the ${through}; ` +
    `replies of 2 chunks, same first-chunk delay): all had their first delta ${fmt(burst.rampMs / 1000, 1)} s after the first request; ` +
    (burst.admissionWindowMs === undefined ? 'admission window n/a (the fake did not receive every call)' : `admission window ${fmt(burst.admissionWindowMs / 1000, 2)} s`) +
    (cut
      ? `; in the ${fmt(cut.ms / 1000, 2)} s sampled around it this process was busy ${fmt(cut.elu * 100, 0)} % of the time, ${fmt(cut.cpuMs / options.streams, 2)} ms CPU per admission`
      : '') +
    `; clients and fake ${fmt((burst.clientCpuMsDuringAdmission ?? 0) / 1000, 2)} s CPU; the fake writing its first chunk → first delta ` +
    `p99 ${fmt(percentile(afterModel, 99), 1)} ms; failed: ${burst.failed}` +
    (burst.failures.length ? ` (${burst.failures.map((f) => `\`${f.replace(/\s+/g, ' ')}\``).join('; ')})` : '')
  );
}

const row = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;

function ttfdTable(samples: TtfdSample[]): string[] {
  const service = ascending(samples.map((s) => s.service));
  const direct = ascending(samples.map((s) => s.fake));
  const bare = ascending(samples.map((s) => s.bare));
  const overhead = ascending(samples.map((s) => s.service - s.fake));
  const bareOverhead = ascending(samples.map((s) => s.bare - s.fake));
  const done = ascending(samples.map((s) => s.serviceDone));
  const line = (label: string, values: number[]) =>
    row([label, fmt(percentile(values, 50), 2), fmt(percentile(values, 90), 2), fmt(percentile(values, 99), 2), fmt(mean(values), 2)]);
  return [
    '| measured (ms, client-observed) | p50 | p90 | p99 | mean |',
    '|---|---:|---:|---:|---:|',
    line('service: request start → first `event: delta`', service),
    line('fake directly: request start → first content chunk', direct),
    line('bare Fastify proxy: request start → first `event: delta`', bare),
    line('**overhead** (service − fake, per triple)', overhead),
    line('bare Fastify proxy overhead (proxy − fake, per triple): the floor', bareOverhead),
    line('service: request start → `event: done`', done),
  ];
}

function memoryTable(rows: Array<[string, MemorySample]>, perStream: MemorySample): string[] {
  const cells = (m: MemorySample) => [mib(m.rss), mib(m.heapUsed), mib(m.heapTotal), mib(m.external), mib(m.arrayBuffers)];
  return [
    '| app process memory (MiB) | rss | heapUsed | heapTotal | external | arrayBuffers |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map(([label, m]) => row([label, ...cells(m)])),
    row([
      `**per open stream** (open after GC − baseline) / ${options.streams}, KiB`,
      ...[perStream.rss, perStream.heapUsed, perStream.heapTotal, perStream.external, perStream.arrayBuffers].map((b) => fmt(b / 1024, 1)),
    ]),
  ];
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-stream-'));
  const child = fork(fileURLToPath(new URL('./stream-client.ts', import.meta.url)), options.fakeApart ? ['--fake-apart', String(options.chunks)] : [], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const channel = childChannel(child);
  let bench: Awaited<ReturnType<typeof createBenchDatabase>> | undefined;
  let deps: Awaited<ReturnType<typeof createDeps>> | undefined;
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let bareProxy: Awaited<ReturnType<typeof startBareProxy>> | undefined;
  let completed = false;
  try {
    const { env: fakeEnv } = await channel.next('fake', 60_000);
    bench = process.env.DATABASE_URL ? await createBenchDatabase(process.env.DATABASE_URL, 'wsai_bench_stream') : undefined;
    const database = bench?.label ?? 'PGlite (embedded, temporary directory; one connection)';
    // Free-plan credit high enough for every reservation of the run (each reserves max_tokens' worth).
    const config = fakeModelBenchConfig({
      databaseUrl: bench?.url ?? '',
      dataDir,
      fakeEnv,
      plan: { ai_credit: 1_000_000 },
      extra: { THROTTLE_CHAT_MESSAGES: '100000000/minute', THROTTLE_LOGIN: '100000000/minute' },
    });
    process.stdout.write(`starting the app on ${database} (migrations run on start-up)...\n`);
    deps = await createDeps(config, createLogger('silent'));
    app = await buildApp(deps);
    await app.listen({ host: '127.0.0.1', port: 0, backlog: LISTEN_BACKLOG });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('server has no TCP address');
    const cpuAtStart = process.cpuUsage();
    bareProxy = await startBareProxy(fakeEnv.OPENAI_BASE_URL!, fakeEnv.OPENAI_API_KEY!);
    channel.send({ type: 'start', appUrl: `http://127.0.0.1:${address.port}`, bareUrl: bareProxy.url, bareSdkUrl: bareProxy.sdkUrl, options });

    let ttfd: { samples: TtfdSample[]; load: string; cpuMsPerSend: number; statements: SendStatements[] } | undefined;
    // The planner's statistics as a long-running database has them (autovacuum's ANALYZE): a
    // fresh database's statements are planned, and their plans cached per connection, while its
    // tables are nearly empty, and those plans (sequential scans for every step of a message
    // path) would stay for the whole run. Run after the warm-up and after phase (b)'s set-up.
    const analyze = () => deps!.database.db.execute(sql`ANALYZE`);
    if (!options.skipTtfd) {
      if (options.warmup > 0) {
        await channel.next('warmed', 15 * 60_000);
        await analyze();
      }
      // From the first measured send (the warm-up's are not counted).
      const counting = startSendStatementCount(new URL(fakeEnv.OPENAI_BASE_URL!).origin);
      if (options.warmup > 0) channel.send({ type: 'analyzed' });
      const { samples } = await channel.next('ttfd', 15 * 60_000);
      const cpu = process.cpuUsage(cpuAtStart);
      const appCpuMs = (cpu.user + cpu.system) / 1000 - bareProxy.cpuMs();
      const statements = await counting.stop();
      ttfd = { samples, load: loadAverage(), cpuMsPerSend: appCpuMs / (options.sends + options.warmup), statements };
      process.stdout.write(
        `\n${ttfdTable(samples).join('\n')}\n\n- app CPU (user + system) per send, set-up included, the bare proxy's own left out: ${fmt(ttfd.cpuMsPerSend, 2)} ms\n${statementsLine(statements)}\n\n`,
      );
    }

    let mem:
      | {
          baseline: MemorySample;
          openRaw: MemorySample;
          openGc: MemorySample;
          peak: MemorySample;
          after: MemorySample;
          opened: OpenedReport;
          finished: FinishedReport;
          loadAtOpen: string;
          loopDelay: { p50: number; p99: number; max: number };
          rampCpuMs: number;
          admission?: { ms: number; elu: number; cpuMs: number };
          overflows?: number;
          floors: Record<'bare' | 'sdk', { report: BareBurstReport; cut?: { ms: number; elu: number; cpuMs: number } }>;
        }
      | undefined;
    if (!options.skipMemory) {
      await channel.next('ready', 10 * 60_000);
      await analyze();
      const baseline = await memory(true);
      const peak = { ...baseline };
      const sampler = setInterval(() => {
        const m = process.memoryUsage();
        for (const key of Object.keys(peak) as Array<keyof MemorySample>) peak[key] = Math.max(peak[key], m[key]);
      }, 250);
      // How long the app's event loop went without turning (PGlite queries run on it) during the burst.
      const loop = monitorEventLoopDelay({ resolution: 10 });
      const overflowsBefore = listenOverflows();
      try {
        loop.enable();
        const cpuAtOpen = process.cpuUsage();
        // Sampled so the admission window (known only when the child reports) can be cut out.
        const timeline = startTimeline();
        const profiler = args['cpu-profile'] ? await startCpuProfile() : undefined;
        const heapProfiler = args['heap-profile'] ? await startHeapProfile() : undefined;
        channel.send({ type: 'open' });
        const { report: opened } = await channel.next('opened', 30 * 60_000);
        const timelineSamples = timeline.stop();
        if (profiler) await profiler.stop(args['cpu-profile']!);
        if (heapProfiler) await heapProfiler.stop(args['heap-profile']!);
        const rampCpu = process.cpuUsage(cpuAtOpen);
        const admission = admissionWindow(timelineSamples, opened.admissionWindowMs);
        const rampCpuMs = (rampCpu.user + rampCpu.system) / 1000;
        loop.disable();
        const overflowsAfter = listenOverflows();
        const loopDelay = { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 };
        const openRaw = await memory(false);
        const openGc = await memory(true);
        const loadAtOpen = loadAverage();
        channel.send({ type: 'sampled' });
        const { report: finished } = await channel.next('finished', 30 * 60_000);
        clearInterval(sampler);
        const after = await memory(true);
        // The floors: the same burst through the bare proxy, then through it with the AI SDK's
        // provider path (this process; the app idles meanwhile).
        const floor = async (target: 'bare' | 'sdk') => {
          await freshProviderConnections();
          const floorTimeline = startTimeline();
          const floorProfiler = args['cpu-profile'] ? await startCpuProfile() : undefined;
          channel.send({ type: 'bareBurst', target });
          const { report } = await channel.next('bareBurst', 30 * 60_000);
          if (floorProfiler) await floorProfiler.stop(args['cpu-profile']!.replace(/(\.cpuprofile)?$/, `.${target}-floor.cpuprofile`));
          return { report, cut: admissionWindow(floorTimeline.stop(), report.admissionWindowMs) };
        };
        const floors = { bare: await floor('bare'), sdk: await floor('sdk') };
        const overflows = overflowsBefore !== undefined && overflowsAfter !== undefined ? overflowsAfter - overflowsBefore : undefined;
        mem = { baseline, openRaw, openGc, peak, after, opened, finished, loadAtOpen, loopDelay, rampCpuMs, overflows, admission, floors };
      } finally {
        clearInterval(sampler);
      }
    }

    const m = machine();
    const phaseA = options.skipTtfd
      ? '(a) skipped (--skip-ttfd: (b) runs in a fresh process); '
      : `(a) ${options.sends} sequential sends after ${options.warmup} warm-up sends, ${options.turnsPerChat} turns per chat ` +
        `(a new chat every ${options.turnsPerChat} sends), fake reply of ${options.chunks} chunks without delay` +
        `${options.fakeApart ? ', the fake model server in a process of its own (--fake-apart)' : ''}; `;
    const phaseB = options.skipMemory
      ? '(b) skipped (--skip-memory); '
      : `(b) ${options.streams} concurrent streams over ${options.users * options.chatsPerUser} chats (${options.users} users, ` +
      `each with its own workspace), fake reply of ${options.chunks} chunks ${options.chunkDelayMs} ms apart, ` +
      `${options.maxPending ? `at most ${options.maxPending} sends waiting for a first delta at a time` : 'all sent at once'}; `;
    const settings =
      `- settings: ${phaseA}${phaseB}` +
      `database pool ${bench ? config.DATABASE_POOL_SIZE : 1} connection(s), planner statistics updated (ANALYZE) after the warm-up and before (b); GC ${gc ? 'forced (--expose-gc)' : 'not available (run with --expose-gc)'}`;
    const lines: string[] = [
      '`npm run bench:stream`: the app in this process, the fake model server and every client in a child process,',
      'all on 127.0.0.1. Streamed sends go through `POST /api/workspaces/{ws}/chats/{chat}/messages/stream/` (auth,',
      'throttle, plan and credit reservation, user message insert, path load, AI SDK stream from the fake, reply',
      'save and credit settlement); users, workspaces and chats are made through the HTTP API.',
      '',
      machineLine(),
      `- database: ${database}; 1-minute / 5-minute / 15-minute load average ${loadBefore} at the start`,
      settings,
    ];
    let failed = false;
    if (ttfd) {
      lines.push(
        '',
        `**(a) time to first delta** (${ttfd.samples.length} pairs; load average ${ttfd.load} after the phase)`,
        '',
        ...ttfdTable(ttfd.samples),
        '',
        `- app CPU (user + system) per send, set-up included, the bare proxy's own left out: ${fmt(ttfd.cpuMsPerSend, 2)} ms`,
        statementsLine(ttfd.statements),
      );
    }
    if (mem) {
      const { baseline, openRaw, openGc, peak, after, opened, finished, loopDelay, rampCpuMs, overflows, admission: admissionCut, floors } = mem;
      const perStream: MemorySample = {
        rss: (openGc.rss - baseline.rss) / options.streams,
        heapUsed: (openGc.heapUsed - baseline.heapUsed) / options.streams,
        heapTotal: (openGc.heapTotal - baseline.heapTotal) / options.streams,
        external: (openGc.external - baseline.external) / options.streams,
        arrayBuffers: (openGc.arrayBuffers - baseline.arrayBuffers) / options.streams,
      };
      const firstDelta = ascending(opened.firstDeltaMs);
      const admission = ascending(opened.admissionMs);
      const afterModel = ascending(opened.afterModelFirstChunkMs);
      const streamMs = ascending(finished.streamMs);
      const statuses = Object.entries(finished.statuses)
        .map(([s, n]) => `${s}: ${n}`)
        .join(', ');
      failed = finished.done !== options.streams || finished.errorEvents > 0 || opened.finishedBeforeAllOpen > 0 || opened.timedOut;
      const memRows: Array<[string, MemorySample]> = [
        [`baseline: after set-up${options.skipTtfd ? '' : ' and phase (a)'}, after GC`, baseline],
        [`${opened.opened} streams open (each past its first delta), before GC`, openRaw],
        [`${opened.opened} streams open, after GC`, openGc],
        ['peak during the phase (sampled every 250 ms, no GC)', peak],
        ['all streams finished, after GC', after],
      ];
      const sectionStart = lines.length;
      lines.push(
        '',
        `**(b) ${options.streams} concurrent streams** (load average ${mem.loadAtOpen} with all open)`,
        '',
        `- ramp: all ${opened.opened} streams had their first delta ${fmt(opened.rampMs / 1000, 1)} s after the first request ` +
          `(first delta p50 ${fmt(percentile(firstDelta, 50) / 1000, 2)} s, p99 ${fmt(percentile(firstDelta, 99) / 1000, 2)} s from the start ` +
          `of the burst, the fake's own first chunk comes after ${options.chunkDelayMs} ms); streams already finished at that moment: ` +
          `${opened.finishedBeforeAllOpen}; failed before a first delta: ${opened.failed}${opened.timedOut ? '; TIMED OUT waiting' : ''}`,
        `- per stream (${afterModel.length} matched to their model call${afterModel.length ? '' : ': none, figures meaningless'}): request → model call received by the fake (admission) ` +
          `p50 ${fmt(percentile(admission, 50), 0)} ms, p99 ${fmt(percentile(admission, 99), 0)} ms, max ${fmt(admission.at(-1) ?? 0, 0)} ms; ` +
          `the fake writing its own first chunk → first delta p50 ${fmt(percentile(afterModel, 50), 1)} ms, p99 ${fmt(percentile(afterModel, 99), 1)} ms, ` +
          `max ${fmt(afterModel.at(-1) ?? 0, 1)} ms`,
        ...(admissionCut
          ? [
              `- admission window (first request → the fake has every model call): ${fmt((opened.admissionWindowMs ?? 0) / 1000, 2)} s; ` +
                `in the ${fmt(admissionCut.ms / 1000, 2)} s sampled around it, app main thread busy ` +
                `${fmt(admissionCut.elu * 100, 0)} % of it (event-loop utilisation), app CPU ${fmt(admissionCut.cpuMs / 1000, 2)} s ` +
                `(${fmt(admissionCut.cpuMs / options.streams, 2)} ms per admission, GC and other threads included); clients and fake (one process) ` +
                `${fmt((opened.clientCpuMsDuringAdmission ?? 0) / 1000, 2)} s CPU`,
            ]
          : []),
        floorLine('floor, the same', 'bare Fastify proxy of (a) (this process, no auth, database or AI SDK', floors.bare.report, floors.bare.cut),
        floorLine('floor with the AI SDK, the same', 'same proxy calling the model through the app\'s provider path (AI SDK OpenAI client, providerFetch, streamPlainText; no auth or database', floors.sdk.report, floors.sdk.cut),
        `- app event loop during the ramp: delay p50 ${fmt(loopDelay.p50, 0)} ms, p99 ${fmt(loopDelay.p99, 0)} ms, max ${fmt(loopDelay.max, 0)} ms` +
          (overflows !== undefined ? `; listen-queue overflows (kernel ListenOverflows, system-wide) during the ramp: ${fmt(overflows)}` : '') +
          `; app CPU (user + system) during the ramp ${fmt(rampCpuMs / 1000, 1)} s, ${fmt(rampCpuMs / options.streams, 2)} ms per stream`,
        `- end: ${finished.done} of ${options.streams} ended with \`event: done\`, ${finished.errorEvents} with \`event: error\`; ` +
          `HTTP statuses ${statuses}; ${finished.deltasPerStream.min}–${finished.deltasPerStream.max} deltas per stream; ` +
          `stream duration p50 ${fmt(percentile(streamMs, 50) / 1000, 1)} s, max ${fmt((streamMs.at(-1) ?? 0) / 1000, 1)} s`,
        ...(finished.failures.length ? [`- failures (first ${finished.failures.length}): ${finished.failures.map((f) => `\`${f.replace(/\s+/g, ' ')}\``).join('; ')}`] : []),
        '',
        ...memoryTable(memRows, perStream),
      );
      process.stdout.write(`\n${lines.slice(sectionStart).join('\n')}\n\n`);
    }
    lines.push('', `- load average at the end: ${loadAverage()}`);
    process.stdout.write(`${m.cpus} CPUs, ${m.cpu}, Node ${m.node}; ${database}\n`);
    if (failed) process.stdout.write('warning: not every stream ended with done at full concurrency (see above)\n');
    if (args['no-record']) process.stdout.write('not recorded (--no-record)\n');
    else appendResults(`stream (${bench ? 'PostgreSQL' : 'PGlite'})`, lines);
    if (failed) process.exitCode = 1;
    completed = true;
  } finally {
    if (!completed) child.kill();
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await Promise.race([exited, sleep(5000)]);
      if (child.exitCode === null) child.kill();
    }
    await app?.close();
    await bareProxy?.close();
    await deps?.close();
    await bench?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
