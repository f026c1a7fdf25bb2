/**
 * The client side of bench/stream.ts, run in a child process (`fork`) so that the memory the
 * parent measures is the app's alone. This process runs the fake model server (the app's
 * providers point at it) and every HTTP client: account/workspace/chat set-up through the real
 * API, the sequential time-to-first-delta runs, and the 1,000 concurrent streams.
 *
 * Protocol (IPC messages, see `ParentMessage` / `ChildMessage`):
 *   child → parent  fake   {env}                      the fake is listening; provider env for the app
 *   parent → child  start  {appUrl, bareUrl, options} the app and the bare Fastify proxy are listening
 *   child → parent  ttfd   {samples}                  phase (a) finished
 *   child → parent  ready  {}                         phase (b)'s users and chats exist
 *   parent → child  open   {}                         memory baseline taken: open the streams
 *   child → parent  opened {...}                      every stream has its first delta (or failed)
 *   parent → child  sampled {}                        memory sampled: let the streams finish
 *   child → parent  finished {...}                    every stream ended
 *   parent → child  bareBurst {target}                memory sampled: the same burst through the bare
 *                                                     proxy (target bare), then with the AI SDK (sdk)
 *   child → parent  bareBurst {...}                   every such stream had its first delta and ended
 * Nothing here talks to anything but 127.0.0.1, and every wait is bounded.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { type RecordedRequest, startFakeModelServer } from '../test/support/fake-model-server.js';
import { benchReply } from './stream-reply.js';

export interface StreamBenchOptions {
  sends: number;
  warmup: number;
  turnsPerChat: number;
  streams: number;
  users: number;
  chatsPerUser: number;
  chunks: number;
  chunkDelayMs: number;
  /** At most this many sends waiting for their first delta at once (0: all at once). */
  maxPending: number;
  skipTtfd: boolean;
  skipMemory: boolean;
  /** The fake model server in a process of its own, not the clients' (phase (a) only). */
  fakeApart: boolean;
}

export interface TtfdSample {
  /** Client-observed ms from request start to the first `event: delta` through the service. */
  service: number;
  /** Same, to the first content chunk of a streaming chat completion sent straight to the fake. */
  fake: number;
  /** Same, to the first `event: delta` through the bare Fastify proxy (bench/stream.ts): the floor. */
  bare: number;
  /** ms from request start to `event: done` through the service. */
  serviceDone: number;
}

export interface OpenedReport {
  /** ms from the first request to the moment every stream had its first delta (or had failed). */
  rampMs: number;
  firstDeltaMs: number[];
  /**
   * Per stream: ms from its request to the fake receiving its model call (the service's admission),
   * and from the moment the fake wrote its first text chunk to the first delta (the
   * service's added lag on the way back).
   */
  admissionMs: number[];
  afterModelFirstChunkMs: number[];
  /**
   * ms from the first request until the fake had received every stream's model call (undefined
   * when some never came), and the CPU this process (every client and the fake) used meanwhile.
   */
  admissionWindowMs?: number;
  clientCpuMsDuringAdmission?: number;
  opened: number;
  /** Streams already finished when the last one opened (should be 0: the sample is at full concurrency). */
  finishedBeforeAllOpen: number;
  failed: number;
  timedOut: boolean;
}

export interface FinishedReport {
  done: number;
  errorEvents: number;
  failed: number;
  statuses: Record<string, number>;
  deltasPerStream: { min: number; max: number };
  streamMs: number[];
  failures: string[];
}

/** (b)'s burst through the bare Fastify proxy: the floor of admitting that many streams here. */
export interface BareBurstReport {
  /** ms from the first request to the moment every stream had its first delta (or had failed). */
  rampMs: number;
  admissionWindowMs?: number;
  clientCpuMsDuringAdmission?: number;
  /** Per stream: the fake writing its first text chunk → the first delta. */
  afterModelFirstChunkMs: number[];
  failed: number;
  failures: string[];
}

export type ChildMessage =
  | { type: 'fake'; env: Record<string, string> }
  | { type: 'warmed' }
  | { type: 'ready' }
  | { type: 'ttfd'; samples: TtfdSample[] }
  | { type: 'opened'; report: OpenedReport }
  | { type: 'finished'; report: FinishedReport }
  | { type: 'bareBurst'; report: BareBurstReport }
  | { type: 'error'; message: string };

export type ParentMessage =
  | { type: 'start'; appUrl: string; bareUrl: string; bareSdkUrl: string; options: StreamBenchOptions }
  | { type: 'analyzed' }
  | { type: 'open' }
  | { type: 'sampled' }
  | { type: 'bareBurst'; target: 'bare' | 'sdk' };

/** User messages starting with this get the slow reply (phase b). */
const SLOW_PREFIX = 'slow:';
/** The bare proxy's burst: slow replies too (same first-chunk delay), but of two chunks, so it ends soon. */
const BARE_BURST_PREFIX = `${SLOW_PREFIX} bare:`;
/** When the fake received the model call of (b)'s stream i (its text ends with `stream i`). */
const slowCallReceivedAt = new Map<number, number>();
/** When the fake wrote the first text chunk of (b)'s stream i. */
const slowFirstChunkWrittenAt = new Map<number, number>();
let onSlowCall: (() => void) | undefined;

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

function nextMessage<T extends ParentMessage['type']>(type: T, timeoutMs: number): Promise<Extract<ParentMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.off('message', onMessage);
      reject(new Error(`no "${type}" message from the parent within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (message: ParentMessage) => {
      if (message.type !== type) return;
      clearTimeout(timer);
      process.off('message', onMessage);
      resolve(message as Extract<ParentMessage, { type: T }>);
    };
    process.on('message', onMessage);
  });
}

/**
 * The fake model server in a process of its own (bench/stream-fake.ts; `--fake-apart <chunks>`,
 * phase (a) only): its URL and provider env, and how to stop it.
 */
async function fakeApart(chunks: string) {
  const child = fork(fileURLToPath(new URL('./stream-fake.ts', import.meta.url)), [chunks], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const listening = await new Promise<{ url: string; env: Record<string, string> }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the fake model process did not start within 60 s')), 60_000);
    child.once('message', (message: { url: string; env: Record<string, string> }) => {
      clearTimeout(timer);
      resolve(message);
    });
    child.once('exit', (code) => reject(new Error(`the fake model process exited (${code})`)));
  });
  return {
    ...listening,
    requests: [] as RecordedRequest[],
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    },
  };
}

async function main(): Promise<void> {
  let options!: StreamBenchOptions;
  const apartChunks = process.argv.indexOf('--fake-apart');
  const fake = apartChunks >= 0 ? await fakeApart(process.argv[apartChunks + 1] ?? '20') : await startFakeModelServer({
    defaultReply: (req: RecordedRequest) => {
      const slow = req.lastUserText?.startsWith(SLOW_PREFIX) === true;
      const slowStream = slow ? /stream (\d+)$/.exec(req.lastUserText!)?.[1] : undefined;
      if (slowStream !== undefined) {
        slowCallReceivedAt.set(Number(slowStream), performance.now());
        onSlowCall?.();
      }
      const chunks = req.lastUserText?.startsWith(BARE_BURST_PREFIX) ? 2 : options.chunks;
      const onFirstChunkWritten = () => slowFirstChunkWrittenAt.set(Number(slowStream), performance.now());
      return slow
        ? { ...benchReply(chunks), delayMs: options.chunkDelayMs, onFirstChunkWritten }
        : benchReply(options.chunks);
    },
  });
  // The fake records every request; a long run must not keep 1,000 request bodies around.
  const trim = setInterval(() => fake.requests.splice(0, fake.requests.length), 1000);
  trim.unref();
  const newAgent = () => new Agent({ connections: 4096, pipelining: 1, keepAliveTimeout: 60_000, bodyTimeout: 300_000, headersTimeout: 300_000 });
  const agent = newAgent();
  try {
    const started = nextMessage('start', 600_000);
    await send({ type: 'fake', env: fake.env });
    const start = await started;
    options = start.options;
    const api = createApi(start.appUrl, agent);
    if (!options.skipTtfd) await send({ type: 'ttfd', samples: await ttfdPhase(api, fake.url, start.bareUrl, agent) });
    if (!options.skipMemory) {
      // Each request is listened for before the message it answers (`finished`, then the previous report).
      let requested = nextMessage('bareBurst', 30 * 60_000);
      await memoryPhase(api);
      const floorUrls = [start.bareUrl, start.bareSdkUrl];
      for (const [index, url] of floorUrls.entries()) {
        await requested;
        // Its own connections, as the app's burst opened (the earlier floor's would be reused).
        const burstAgent = newAgent();
        const report = await bareBurstPhase(url, burstAgent).finally(() => burstAgent.close());
        if (index + 1 < floorUrls.length) requested = nextMessage('bareBurst', 30 * 60_000);
        await send({ type: 'bareBurst', report });
      }
    }
  } finally {
    clearInterval(trim);
    await agent.close();
    await fake.close();
  }

  // --- (a) time to first delta, sequential -------------------------------------------------

  async function ttfdPhase(api: Api, fakeUrl: string, bareUrl: string, dispatcher: Agent): Promise<TtfdSample[]> {
    const total = options.warmup + options.sends;
    const user = await api.newUser();
    const workspace = await api.newWorkspace(user, 'TTFD');
    const chats: string[] = [];
    for (let i = 0; i < Math.ceil(total / options.turnsPerChat); i++) chats.push(await api.newChat(user, workspace, `TTFD ${i}`));
    const samples: TtfdSample[] = [];
    process.stdout.write(`(a) ${options.warmup} warm-up + ${options.sends} sequential streamed sends, each paired with a direct request to the fake...\n`);
    for (let i = 0; i < total; i++) {
      if (i === options.warmup && i > 0) {
        // The parent updates the planner's statistics before the measured sends (see bench/stream.ts).
        const analyzed = nextMessage('analyzed', 600_000);
        await send({ type: 'warmed' });
        await analyzed;
      }
      const chat = chats[Math.floor(i / options.turnsPerChat)]!;
      const content = `Question ${i}: how do streamed replies reach the browser?`;
      // Rotate the order so no path always runs on a freshly idle machine.
      let service = { first: 0, done: 0 };
      let direct = 0;
      let bare = 0;
      const runs = [
        async () => (service = await api.streamOnce(user, workspace, chat, content)),
        async () => (direct = await fakeOnce(fakeUrl, dispatcher, content)),
        async () => (bare = await bareOnce(bareUrl, dispatcher, content)),
      ];
      for (let k = 0; k < runs.length; k++) await runs[(i + k) % runs.length]!();
      if (i >= options.warmup) samples.push({ service: service.first, fake: direct, bare, serviceDone: service.done });
    }
    return samples;
  }

  // --- (b) memory of N concurrent streams ---------------------------------------------------

  async function memoryPhase(api: Api): Promise<void> {
    const users: Caller[] = [];
    const chats: Array<{ user: Caller; workspace: string; chat: string }> = [];
    process.stdout.write(`(b) set-up: ${options.users} users, ${options.users * options.chatsPerUser} chats...\n`);
    for (let u = 0; u < options.users; u++) {
      const user = await api.newUser();
      users.push(user);
      const workspace = await api.newWorkspace(user, `Memory ${u}`);
      for (let c = 0; c < options.chatsPerUser; c++) chats.push({ user, workspace, chat: await api.newChat(user, workspace, `Memory ${u}.${c}`) });
    }
    const go = nextMessage('open', 600_000);
    await send({ type: 'ready' });
    await go;

    const expectedMs = options.chunks * options.chunkDelayMs;
    process.stdout.write(`(b) opening ${options.streams} concurrent streams (${options.chunks} chunks, ${options.chunkDelayMs} ms apart: ~${(expectedMs / 1000).toFixed(0)} s each)...\n`);
    const t0 = performance.now();
    const window = watchAdmissionWindow(t0);
    let opened = 0;
    let settled = 0;
    let failed = 0;
    let finishedBeforeAllOpen = 0;
    let allOpenAt: number | undefined;
    const firstDeltaMs: number[] = [];
    const admissionMs: number[] = [];
    const afterModelFirstChunkMs: number[] = [];
    const streamMs: number[] = [];
    const statuses: Record<string, number> = {};
    const failures: string[] = [];
    let done = 0;
    let errorEvents = 0;
    let minDeltas = Number.POSITIVE_INFINITY;
    let maxDeltas = 0;
    let notifyOpen: () => void = () => undefined;
    const allOpen = new Promise<void>((resolve) => (notifyOpen = resolve));
    const checkOpen = () => {
      if (allOpenAt === undefined && opened + failed >= options.streams) {
        allOpenAt = performance.now();
        notifyOpen();
      }
    };

    // Optional pacing: at most `maxPending` sends between request start and first delta.
    let pending = 0;
    const waiting: Array<() => void> = [];
    const acquire = async () => {
      while (options.maxPending > 0 && pending >= options.maxPending) await new Promise<void>((resolve) => waiting.push(resolve));
      pending += 1;
    };
    const release = () => {
      pending -= 1;
      waiting.shift()?.();
    };

    const runs = Array.from({ length: options.streams }, async (_, i) => {
      const target = chats[i % chats.length]!;
      await acquire();
      const begin = performance.now();
      let sawFirst = false;
      try {
        const result = await api.stream(target.user, target.workspace, target.chat, `${SLOW_PREFIX} stream ${i}`, () => {
          sawFirst = true;
          release();
          opened += 1;
          const now = performance.now();
          firstDeltaMs.push(now - t0);
          const received = slowCallReceivedAt.get(i);
          const written = slowFirstChunkWrittenAt.get(i);
          if (received !== undefined && written !== undefined) {
            admissionMs.push(received - begin);
            afterModelFirstChunkMs.push(now - written);
          }
          checkOpen();
        });
        statuses[result.status] = (statuses[result.status] ?? 0) + 1;
        if (result.done) done += 1;
        if (result.errors) errorEvents += 1;
        minDeltas = Math.min(minDeltas, result.deltas);
        maxDeltas = Math.max(maxDeltas, result.deltas);
        if (!result.done && failures.length < 5) failures.push(`status ${result.status}: ${result.tail.slice(0, 300)}`);
        if (!sawFirst) {
          release();
          failed += 1;
          checkOpen();
        } else if (allOpenAt === undefined) finishedBeforeAllOpen += 1;
        streamMs.push(performance.now() - begin);
      } catch (error) {
        statuses.error = (statuses.error ?? 0) + 1;
        const code = (error as { code?: string }).code ?? '';
        const when = `${((performance.now() - begin) / 1000).toFixed(1)} s after the request, ${sawFirst ? 'after' : 'before'} the first delta`;
        if (failures.length < 5) failures.push(`${String(error)} ${code} (${when})`);
        if (!sawFirst) {
          release();
          failed += 1;
          checkOpen();
        }
      } finally {
        settled += 1;
      }
    });

    // Bounded: give up waiting for the last first-deltas after ten stream lengths (and 2 min).
    const openTimeout = Math.max(120_000, 10 * expectedMs);
    const timedOut = await Promise.race([allOpen.then(() => false), sleep(openTimeout).then(() => true)]);
    const rampMs = (allOpenAt ?? performance.now()) - t0;
    const sampled = nextMessage('sampled', 600_000);
    const { admissionWindowMs, clientCpuMsDuringAdmission } = window;
    await send({ type: 'opened', report: { rampMs, firstDeltaMs, admissionMs, afterModelFirstChunkMs, admissionWindowMs, clientCpuMsDuringAdmission, opened, finishedBeforeAllOpen, failed, timedOut } });
    await sampled;
    process.stdout.write(`(b) all opened after ${(rampMs / 1000).toFixed(1)} s; waiting for the streams to finish...\n`);
    const finishTimeout = Math.max(300_000, 20 * expectedMs);
    await Promise.race([Promise.all(runs), sleep(finishTimeout)]);
    if (settled < options.streams) failures.push(`${options.streams - settled} streams had not ended after ${finishTimeout / 1000} s`);
    await send({
      type: 'finished',
      report: {
        done,
        errorEvents,
        failed,
        statuses,
        deltasPerStream: { min: Number.isFinite(minDeltas) ? minDeltas : 0, max: maxDeltas },
        streamMs,
        failures,
      },
    });
  }

  // --- (b) the same burst through the bare Fastify proxy: the floor --------------------------

  async function bareBurstPhase(bareUrl: string, dispatcher: Agent): Promise<BareBurstReport> {
    process.stdout.write(`(b) the same ${options.streams} streams through the bare Fastify proxy (${bareUrl}; 2 chunks each)...\n`);
    slowCallReceivedAt.clear();
    slowFirstChunkWrittenAt.clear();
    const t0 = performance.now();
    const window = watchAdmissionWindow(t0);
    const afterModelFirstChunkMs: number[] = [];
    const failures: string[] = [];
    let lastFirstDelta = 0;
    let failed = 0;
    await Promise.all(
      Array.from({ length: options.streams }, async (_, i) => {
        const begin = performance.now();
        try {
          const first = await bareOnce(bareUrl, dispatcher, `${BARE_BURST_PREFIX} stream ${i}`);
          const at = begin + first;
          lastFirstDelta = Math.max(lastFirstDelta, at - t0);
          const written = slowFirstChunkWrittenAt.get(i);
          if (written !== undefined) afterModelFirstChunkMs.push(at - written);
        } catch (error) {
          // As for the app's streams: the ramp ends when every stream has its first delta or has failed.
          lastFirstDelta = Math.max(lastFirstDelta, performance.now() - t0);
          failed += 1;
          if (failures.length < 5) failures.push(String(error));
        }
      }),
    );
    const { admissionWindowMs, clientCpuMsDuringAdmission } = window;
    return { rampMs: lastFirstDelta, admissionWindowMs, clientCpuMsDuringAdmission, afterModelFirstChunkMs, failed, failures };
  }

  /**
   * From `t0`: when the fake has received every stream's model call (the admission window) and
   * the CPU this process (clients and fake) used until then; both stay undefined until it has.
   */
  function watchAdmissionWindow(t0: number) {
    const cpuAtStart = process.cpuUsage();
    const window: { admissionWindowMs?: number; clientCpuMsDuringAdmission?: number } = {};
    onSlowCall = () => {
      if (window.admissionWindowMs !== undefined || slowCallReceivedAt.size < options.streams) return;
      window.admissionWindowMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpuAtStart);
      window.clientCpuMsDuringAdmission = (cpu.user + cpu.system) / 1000;
    };
    return window;
  }
}

// --- HTTP helpers ------------------------------------------------------------------------------

interface Caller {
  token: string;
}

type Api = ReturnType<typeof createApi>;

function createApi(baseUrl: string, dispatcher: Agent) {
  async function call<T>(method: 'GET' | 'POST', path: string, body: unknown, as?: Caller): Promise<T> {
    const response = await request(`${baseUrl}${path}`, {
      method,
      dispatcher,
      headers: {
        'content-type': 'application/json',
        ...(as ? { authorization: `Bearer ${as.token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.body.text();
    if (response.statusCode >= 300) throw new Error(`${method} ${path} answered ${response.statusCode}: ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  const messagesPath = (workspace: string, chat: string) => `/api/workspaces/${workspace}/chats/${chat}/messages/stream/`;

  /** One streamed send; `onFirstDelta` runs when the first `event: delta` arrives. */
  async function stream(as: Caller, workspace: string, chat: string, content: string, onFirstDelta: () => void) {
    const response = await request(`${baseUrl}${messagesPath(workspace, chat)}`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${as.token}` },
      body: JSON.stringify({ content }),
    });
    let buffer = '';
    let deltas = 0;
    let done = false;
    let errors = 0;
    let tail = '';
    response.body.setEncoding('utf8');
    for await (const chunk of response.body as AsyncIterable<string>) {
      buffer += chunk;
      tail = (tail + chunk).slice(-600);
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        // Events carry an `id:` line before `event:` (reattachable streams).
        const event = /^event: (\w+)$/m.exec(block)?.[1];
        if (event === 'delta') {
          deltas += 1;
          if (deltas === 1) onFirstDelta();
        } else if (event === 'done') done = true;
        else if (event === 'error') errors += 1;
      }
    }
    return { status: response.statusCode, deltas, done, errors, tail };
  }

  return {
    async newUser(): Promise<Caller> {
      const email = `bench-${Date.now()}-${randomBytes(4).toString('hex')}@example.com`;
      const password = `bench-${randomBytes(12).toString('hex')}`;
      await call('POST', '/auth/users/', { email, password, name: 'Bench User' });
      const login = await call<{ auth_token: string }>('POST', '/auth/token/login/', { email, password });
      return { token: login.auth_token };
    },
    async newWorkspace(as: Caller, name: string): Promise<string> {
      return (await call<{ id: string }>('POST', '/api/workspaces/', { name: `${name} ${randomBytes(3).toString('hex')}` }, as)).id;
    },
    async newChat(as: Caller, workspace: string, name: string): Promise<string> {
      return (await call<{ id: string }>('POST', `/api/workspaces/${workspace}/chats/`, { name }, as)).id;
    },
    stream,
    /** Times one streamed send: first delta and done, in ms from the request start. */
    async streamOnce(as: Caller, workspace: string, chat: string, content: string) {
      const t0 = performance.now();
      let first = Number.NaN;
      const result = await stream(as, workspace, chat, content, () => (first = performance.now() - t0));
      const doneAt = performance.now() - t0;
      if (result.status !== 200 || !result.done || Number.isNaN(first)) {
        throw new Error(`streamed send failed: status ${result.status}, done ${result.done}; body tail: ${result.tail}`);
      }
      return { first, done: doneAt };
    },
  };
}

/**
 * POSTs `body` to `url` and reads the whole streamed answer: ms from the request start to the
 * moment the text received so far first `matches`.
 */
async function msToFirst(url: string, dispatcher: Agent, headers: Record<string, string>, body: unknown, matches: (seen: string) => boolean, what: string) {
  const t0 = performance.now();
  const response = await request(url, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  let first = Number.NaN;
  let seen = '';
  response.body.setEncoding('utf8');
  for await (const chunk of response.body as AsyncIterable<string>) {
    if (Number.isNaN(first)) {
      seen += chunk;
      if (matches(seen)) first = performance.now() - t0;
    }
  }
  if (response.statusCode !== 200 || Number.isNaN(first)) throw new Error(`${what} failed: status ${response.statusCode}`);
  return first;
}

/** A send through the bare Fastify proxy; ms to its first `event: delta`. */
const bareOnce = (bareUrl: string, dispatcher: Agent, content: string) =>
  msToFirst(bareUrl, dispatcher, {}, { content }, (seen) => seen.includes('event: delta\n'), 'request to the bare proxy');

/** A streaming chat completion straight to the fake, shaped like the app's; ms to the first content chunk. */
const fakeOnce = (fakeUrl: string, dispatcher: Agent, content: string) =>
  msToFirst(
    `${fakeUrl}/v1/chat/completions`,
    dispatcher,
    { authorization: 'Bearer sk-fake-openai' },
    { model: 'gpt-4.1-mini', stream: true, stream_options: { include_usage: true }, max_tokens: 4096, messages: [{ role: 'user', content }] },
    // The first chunk carries the role with empty content; the first text chunk is the one.
    (seen) => /"delta":\{"content":"[^"]/.test(seen),
    'direct request to the fake',
  );

main().then(
  () => process.disconnect?.(),
  async (error: unknown) => {
    process.exitCode = 1;
    await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.disconnect?.();
  },
);
