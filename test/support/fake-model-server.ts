import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { LISTEN_BACKLOG } from '../../src/platform/listen.js';

/*
 * A real HTTP server that speaks just enough of the OpenAI (Chat Completions, embeddings, audio
 * transcriptions), Anthropic (Messages) and Google Gemini (generateContent, embeddings) APIs for
 * the AI SDK's own provider clients to talk to it. Tests point the provider base URLs at it,
 * program replies with `enqueue`/`script`, and assert on the recorded requests.
 *
 * Layout: public types → startFakeModelServer (routing, recording, queues) → one section per
 * API that turns a normalized `ReplyPlan` into that API's wire format → shared SSE streaming,
 * multipart parsing and deterministic helpers (token counts, embeddings).
 */

export type FakeApi =
  | 'openai.chat'
  | 'openai.embeddings'
  | 'openai.transcriptions'
  | 'anthropic.messages'
  | 'google.generate'
  | 'google.embed'
  | 'unknown';

export interface MultipartFile {
  field: string;
  filename: string;
  contentType: string;
  size: number;
}

export interface MultipartBody {
  fields: Record<string, string | string[]>;
  files: MultipartFile[];
}

export interface RecordedRequest {
  api: FakeApi;
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, a MultipartBody for multipart requests, or the raw text when neither parses. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests index freely into bodies
  /** Whether the request asked for a streamed reply. */
  stream: boolean;
  /** Model id from the body or the Gemini path. */
  model?: string;
  /** Text of the last user turn (tool results included), as the default reply echoes it. */
  lastUserText?: string;
  /** Set when the client closed the connection before the reply was complete (not by a scripted failure). */
  aborted: boolean;
}

export interface FakeUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface FakeToolCall {
  /** Defaults to `call_<n>` (OpenAI, Google) or `toolu_<n>` (Anthropic). */
  id?: string;
  name: string;
  /** Arguments; objects are JSON-encoded, strings are sent as they are (to test bad JSON). */
  args: unknown;
}

/** One programmed reply to a chat request (any of the three chat APIs). */
export interface ChatReply {
  /** Reply text. Default: `Echo: <last user text>`. */
  text?: string;
  /** Split the text into this many chunks (default 3), or give the chunks verbatim. */
  chunks?: number | string[];
  /** Default: word counts of the prompt and the reply. */
  usage?: Partial<FakeUsage>;
  /** Ask the client to call tools (sent after the text, if any). */
  toolCalls?: FakeToolCall[];
  /** Wire finish reason; defaults to the API's "stop" or "tool calls" value. */
  finishReason?: string;
  /** Delay before each streamed chunk (and before a non-streamed reply), in ms. */
  delayMs?: number;
  /** Streaming: called once the first text chunk has been written (benchmarks time the service's lag from it). */
  onFirstChunkWritten?: () => void;
  /** Streaming: fail after this many text chunks (0 = before any text). */
  failAfterChunks?: number;
  /** How to fail: cut the connection (default) or send the API's in-stream error event. */
  failMode?: 'destroy' | 'error-event';
  /** Answer with this HTTP error status instead (with the API's error body). */
  status?: number;
  errorMessage?: string;
  /** Extra response headers (e.g. retry-after with a 429). */
  headers?: Record<string, string>;
}

export interface TranscriptionReply {
  text?: string;
  /** Language name as OpenAI's verbose_json reports it, e.g. `english`. */
  language?: string;
  /** Seconds; default derived from the file size (16 kHz, 16-bit mono). */
  duration?: number;
  delayMs?: number;
  status?: number;
  errorMessage?: string;
}

export interface EmbeddingReply {
  delayMs?: number;
  status?: number;
  errorMessage?: string;
}

type Scripted<T> = T | ((request: RecordedRequest) => T);

export interface FakeModelServerOptions {
  /** Reply used when the chat queue is empty. */
  defaultReply?: (request: RecordedRequest) => ChatReply;
  /** Embedding size when the request names none and the model is unknown (default 1536). */
  defaultDimensions?: number;
}

export interface FakeModelServer {
  /** http://127.0.0.1:PORT */
  url: string;
  /** `${url}/v1`: OPENAI_BASE_URL, OPENAI_COMPATIBLE_BASE_URL. */
  openaiBaseUrl: string;
  /** `${url}/v1`: ANTHROPIC_BASE_URL. */
  anthropicBaseUrl: string;
  /** `${url}/v1beta`: GOOGLE_GENERATIVE_AI_BASE_URL (the Google SDK's base includes the version). */
  googleBaseUrl: string;
  /**
   * Provider settings pointing every provider (openai-compatible included) at this server, with
   * fake keys: pass to loadConfig / createTestApp. The keys are FAKE_KEYS.
   */
  env: Record<string, string>;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  /** Requests to one API. */
  requestsTo(api: FakeApi): RecordedRequest[];
  /** Resolves once at least `count` requests have arrived (default timeout 5 s). */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Appends chat replies; each chat request takes the next one. */
  enqueue(...replies: Scripted<ChatReply>[]): void;
  enqueueTranscription(...replies: Scripted<TranscriptionReply>[]): void;
  enqueueEmbeddings(...replies: Scripted<EmbeddingReply>[]): void;
  /** Replaces all queues at once. */
  script(plan: {
    chat?: Scripted<ChatReply>[];
    transcription?: Scripted<TranscriptionReply>[];
    embeddings?: Scripted<EmbeddingReply>[];
  }): void;
  /** Clears the queues and the recorded requests. */
  reset(): void;
  close(): Promise<void>;
}

/** The API keys in `env`, to assert on the auth headers each client sends. */
export const FAKE_KEYS = {
  openai: 'sk-fake-openai',
  anthropic: 'sk-ant-fake',
  google: 'fake-google-key',
  openaiCompatible: 'fake-compatible-key',
} as const;

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

export async function startFakeModelServer(options: FakeModelServerOptions = {}): Promise<FakeModelServer> {
  const requests: RecordedRequest[] = [];
  let chatQueue: Scripted<ChatReply>[] = [];
  let transcriptionQueue: Scripted<TranscriptionReply>[] = [];
  let embeddingQueue: Scripted<EmbeddingReply>[] = [];
  let waiters: Array<() => void> = [];
  let counter = 0;

  const take = <T>(queue: Scripted<T>[], request: RecordedRequest): T | undefined => {
    const next = queue.shift();
    return typeof next === 'function' ? (next as (r: RecordedRequest) => T)(request) : next;
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error) } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://fake');
    const record: RecordedRequest = {
      api: 'unknown',
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: parseBody(raw, req.headers['content-type']),
      stream: false,
      aborted: false,
    };
    res.on('close', () => {
      if (!res.writableFinished && !cutByServer.has(record)) record.aborted = true;
    });
    const route = routeOf(record);
    record.api = route.api;
    record.model = route.model ?? (typeof record.body?.model === 'string' ? record.body.model : undefined);
    record.stream = route.stream;
    record.lastUserText = lastUserText(record);
    requests.push(record);
    const ready = waiters;
    waiters = [];
    for (const wake of ready) wake();

    const ctx: ReplyContext = { req: record, res, ids: () => ++counter, defaultDimensions: options.defaultDimensions ?? 1536 };
    switch (route.api) {
      case 'openai.chat':
      case 'anthropic.messages':
      case 'google.generate': {
        const reply = take(chatQueue, record) ?? options.defaultReply?.(record) ?? {};
        return sendChat(ctx, route.api, planReply(reply, record));
      }
      case 'openai.embeddings':
      case 'google.embed':
        return sendEmbeddings(ctx, route.api, take(embeddingQueue, record) ?? {});
      case 'openai.transcriptions':
        return sendTranscription(ctx, take(transcriptionQueue, record) ?? {});
      case 'unknown':
        return sendJson(res, 404, { error: { message: `fake model server: no route for ${record.method} ${record.path}` } });
    }
  }

  // A provider takes a burst of calls (bench:stream opens 1,000 at once through the bare proxy);
  // Node's default backlog of 511 would drop SYNs past it and delay those calls by a second.
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: LISTEN_BACKLOG }, resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    openaiBaseUrl: `${url}/v1`,
    anthropicBaseUrl: `${url}/v1`,
    googleBaseUrl: `${url}/v1beta`,
    env: {
      OPENAI_API_KEY: FAKE_KEYS.openai,
      OPENAI_BASE_URL: `${url}/v1`,
      ANTHROPIC_API_KEY: FAKE_KEYS.anthropic,
      ANTHROPIC_BASE_URL: `${url}/v1`,
      GOOGLE_GENERATIVE_AI_API_KEY: FAKE_KEYS.google,
      GOOGLE_GENERATIVE_AI_BASE_URL: `${url}/v1beta`,
      OPENAI_COMPATIBLE_BASE_URL: `${url}/v1`,
      OPENAI_COMPATIBLE_API_KEY: FAKE_KEYS.openaiCompatible,
    },
    requests,
    requestsTo: (api) => requests.filter((r) => r.api === api),
    async waitForRequests(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) throw new Error(`fake model server: waited for ${count} requests, got ${requests.length}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50).unref();
        });
      }
      return requests.slice(0, count);
    },
    enqueue: (...replies) => void chatQueue.push(...replies),
    enqueueTranscription: (...replies) => void transcriptionQueue.push(...replies),
    enqueueEmbeddings: (...replies) => void embeddingQueue.push(...replies),
    script(plan) {
      chatQueue = [...(plan.chat ?? [])];
      transcriptionQueue = [...(plan.transcription ?? [])];
      embeddingQueue = [...(plan.embeddings ?? [])];
    },
    reset() {
      chatQueue = [];
      transcriptionQueue = [];
      embeddingQueue = [];
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections(); // slow streams must not hold close() up
      }),
  };
}

/** Requests whose connection the server cut on purpose (failMode 'destroy'), not the client. */
const cutByServer = new WeakSet<RecordedRequest>();

interface ReplyContext {
  req: RecordedRequest;
  res: ServerResponse;
  ids: () => number;
  defaultDimensions: number;
}

function routeOf(record: RecordedRequest): { api: FakeApi; stream: boolean; model?: string } {
  const { method, path } = record;
  if (method !== 'POST') return { api: 'unknown', stream: false };
  if (path === '/v1/chat/completions') return { api: 'openai.chat', stream: record.body?.stream === true };
  if (path === '/v1/messages') return { api: 'anthropic.messages', stream: record.body?.stream === true };
  if (path === '/v1/embeddings') return { api: 'openai.embeddings', stream: false };
  if (path === '/v1/audio/transcriptions') return { api: 'openai.transcriptions', stream: false };
  const gemini = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/.exec(path);
  if (gemini) {
    const [, model, method] = gemini;
    if (method === 'embedContent' || method === 'batchEmbedContents') return { api: 'google.embed', stream: false, model };
    return { api: 'google.generate', stream: method === 'streamGenerateContent', model };
  }
  return { api: 'unknown', stream: false };
}

// ---------------------------------------------------------------------------------------------
// Chat replies: one normalized plan, three wire formats
// ---------------------------------------------------------------------------------------------

interface ReplyPlan {
  chunks: string[];
  toolCalls: Array<{ id?: string; name: string; args: string }>;
  usage: FakeUsage;
  finishReason?: string;
  delayMs: number;
  onFirstChunkWritten?: () => void;
  failAfterChunks?: number;
  failMode: 'destroy' | 'error-event';
  status?: number;
  errorMessage: string;
  headers: Record<string, string>;
}

function planReply(reply: ChatReply, request: RecordedRequest): ReplyPlan {
  const text = reply.text ?? (reply.toolCalls?.length ? '' : `Echo: ${request.lastUserText ?? ''}`.trimEnd());
  const chunks = Array.isArray(reply.chunks) ? reply.chunks : splitText(text, reply.chunks ?? 3);
  const toolCalls = (reply.toolCalls ?? []).map((call) => ({
    id: call.id,
    name: call.name,
    args: typeof call.args === 'string' ? call.args : JSON.stringify(call.args ?? {}),
  }));
  const outputText = chunks.join('') + toolCalls.map((c) => ` ${c.name} ${c.args}`).join('');
  return {
    chunks,
    toolCalls,
    usage: {
      inputTokens: reply.usage?.inputTokens ?? countTokens(promptText(request)),
      outputTokens: reply.usage?.outputTokens ?? countTokens(outputText),
    },
    finishReason: reply.finishReason,
    delayMs: reply.delayMs ?? 0,
    onFirstChunkWritten: reply.onFirstChunkWritten,
    failAfterChunks: reply.failAfterChunks,
    failMode: reply.failMode ?? 'destroy',
    status: reply.status,
    errorMessage: reply.errorMessage ?? 'The fake model failed.',
    headers: reply.headers ?? {},
  };
}

async function sendChat(ctx: ReplyContext, api: 'openai.chat' | 'anthropic.messages' | 'google.generate', plan: ReplyPlan) {
  const { req, res } = ctx;
  if (plan.status) {
    if (plan.delayMs) await sleep(plan.delayMs);
    return sendJson(res, plan.status, errorBody(api, plan.status, plan.errorMessage), plan.headers);
  }
  const wire = api === 'openai.chat' ? openaiChat(ctx, plan) : api === 'anthropic.messages' ? anthropicMessages(ctx, plan) : googleGenerate(ctx, plan);
  if (!req.stream) {
    if (plan.delayMs) await sleep(plan.delayMs);
    return sendJson(res, 200, wire.json(), plan.headers);
  }
  await streamEvents(ctx, wire.events(), plan, wire.errorEvent);
}

/** An SSE event; `content` marks text chunks, which `failAfterChunks` counts and `delayMs` paces. */
interface SseEvent {
  event?: string;
  data: unknown;
  content?: boolean;
}

interface WireReply {
  json(): unknown;
  events(): SseEvent[];
  errorEvent: SseEvent;
}

// OpenAI Chat Completions -------------------------------------------------------------------

function openaiChat(ctx: ReplyContext, plan: ReplyPlan): WireReply {
  const id = `chatcmpl-fake${ctx.ids()}`;
  const model = ctx.req.model ?? 'fake-model';
  const created = 1_700_000_000;
  const finish = plan.finishReason ?? (plan.toolCalls.length ? 'tool_calls' : 'stop');
  const toolCalls = plan.toolCalls.map((call, index) => ({ id: call.id ?? `call_${ctx.ids()}`, index, name: call.name, args: call.args }));
  const usage = {
    prompt_tokens: plan.usage.inputTokens,
    completion_tokens: plan.usage.outputTokens,
    total_tokens: plan.usage.inputTokens + plan.usage.outputTokens,
  };
  const chunk = (delta: unknown, finishReason: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  return {
    json: () => ({
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: plan.chunks.join('') || null,
            ...(toolCalls.length && {
              tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } })),
            }),
          },
          finish_reason: finish,
        },
      ],
      usage,
    }),
    events: () => {
      const events: SseEvent[] = [{ data: chunk({ role: 'assistant', content: '' }) }];
      for (const text of plan.chunks) events.push({ data: chunk({ content: text }), content: true });
      for (const call of toolCalls) {
        // Name first, arguments in two pieces, as OpenAI streams them.
        const half = Math.ceil(call.args.length / 2);
        events.push({ data: chunk({ tool_calls: [{ index: call.index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }), content: true });
        events.push({ data: chunk({ tool_calls: [{ index: call.index, function: { arguments: call.args.slice(0, half) } }] }) });
        events.push({ data: chunk({ tool_calls: [{ index: call.index, function: { arguments: call.args.slice(half) } }] }) });
      }
      events.push({ data: chunk({}, finish) });
      // stream_options.include_usage: a last chunk with empty choices carries the usage.
      if (ctx.req.body?.stream_options?.include_usage) events.push({ data: { id, object: 'chat.completion.chunk', created, model, choices: [], usage } });
      events.push({ data: '[DONE]' });
      return events;
    },
    errorEvent: { data: { error: { message: plan.errorMessage, type: 'server_error', code: null } } },
  };
}

// Anthropic Messages --------------------------------------------------------------------------

function anthropicMessages(ctx: ReplyContext, plan: ReplyPlan): WireReply {
  const id = `msg_fake${ctx.ids()}`;
  const model = ctx.req.model ?? 'claude-fake';
  const stop = plan.finishReason ?? (plan.toolCalls.length ? 'tool_use' : 'end_turn');
  const text = plan.chunks.join('');
  const toolCalls = plan.toolCalls.map((call) => ({ id: call.id ?? `toolu_${ctx.ids()}`, name: call.name, args: call.args }));
  const usage = { input_tokens: plan.usage.inputTokens, output_tokens: plan.usage.outputTokens };
  return {
    json: () => ({
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [
        ...(text ? [{ type: 'text', text }] : []),
        ...toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: safeJson(c.args) })),
      ],
      stop_reason: stop,
      stop_sequence: null,
      usage,
    }),
    events: () => {
      const events: SseEvent[] = [
        {
          event: 'message_start',
          data: {
            type: 'message_start',
            message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input_tokens, output_tokens: 1 } },
          },
        },
      ];
      let index = 0;
      if (plan.chunks.length) {
        events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } } });
        for (const chunk of plan.chunks) {
          events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text: chunk } }, content: true });
        }
        events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
        index += 1;
      }
      for (const call of toolCalls) {
        events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }, content: true });
        events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: call.args } } });
        events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
        index += 1;
      }
      events.push({ event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } } });
      events.push({ event: 'message_stop', data: { type: 'message_stop' } });
      return events;
    },
    errorEvent: { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: plan.errorMessage } } },
  };
}

// Google Gemini -------------------------------------------------------------------------------

function googleGenerate(ctx: ReplyContext, plan: ReplyPlan): WireReply {
  const finish = plan.finishReason ?? 'STOP';
  const usageMetadata = {
    promptTokenCount: plan.usage.inputTokens,
    candidatesTokenCount: plan.usage.outputTokens,
    totalTokenCount: plan.usage.inputTokens + plan.usage.outputTokens,
  };
  const responseId = `fake-${ctx.ids()}`;
  const functionCalls = plan.toolCalls.map((c) => ({ functionCall: { name: c.name, args: safeJson(c.args) } }));
  const candidate = (parts: unknown[] | null, finishReason?: string) => ({
    ...(parts && { content: { role: 'model', parts } }),
    ...(finishReason && { finishReason }),
    index: 0,
  });
  return {
    json: () => ({
      candidates: [candidate([...(plan.chunks.length ? [{ text: plan.chunks.join('') }] : []), ...functionCalls], finish)],
      usageMetadata,
      modelVersion: ctx.req.model,
      responseId,
    }),
    events: () => {
      const events: SseEvent[] = plan.chunks.map((text) => ({ data: { candidates: [candidate([{ text }])], responseId }, content: true }));
      if (functionCalls.length) events.push({ data: { candidates: [candidate(functionCalls)], responseId }, content: true });
      events.push({ data: { candidates: [candidate(null, finish)], usageMetadata, modelVersion: ctx.req.model, responseId } });
      return events;
    },
    errorEvent: { data: { error: { code: 500, message: plan.errorMessage, status: 'INTERNAL' } } },
  };
}

function errorBody(api: FakeApi, status: number, message: string): unknown {
  if (api === 'anthropic.messages') return { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'api_error', message } };
  if (api.startsWith('google.')) return { error: { code: status, message, status: status === 429 ? 'RESOURCE_EXHAUSTED' : 'INTERNAL' } };
  return { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null } };
}

// ---------------------------------------------------------------------------------------------
// Embeddings and transcriptions
// ---------------------------------------------------------------------------------------------

/** Native sizes of the catalog's embedding models (requests may ask for fewer). */
const knownDimensions: Record<string, number> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
  'gemini-embedding-001': 3072,
};

async function sendEmbeddings(ctx: ReplyContext, api: 'openai.embeddings' | 'google.embed', reply: EmbeddingReply) {
  const { req, res } = ctx;
  if (reply.delayMs) await sleep(reply.delayMs);
  if (reply.status) return sendJson(res, reply.status, errorBody(api, reply.status, reply.errorMessage ?? 'Embedding failed.'));
  const model = req.model ?? '';
  if (api === 'openai.embeddings') {
    const inputs: string[] = Array.isArray(req.body?.input) ? req.body.input : [String(req.body?.input ?? '')];
    const dims = req.body?.dimensions ?? knownDimensions[model] ?? ctx.defaultDimensions;
    const tokens = inputs.reduce((sum, text) => sum + countTokens(text), 0);
    return sendJson(res, 200, {
      object: 'list',
      data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(text, dims) })),
      model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }
  const dimsFor = (r: { outputDimensionality?: number }) => r.outputDimensionality ?? knownDimensions[model] ?? ctx.defaultDimensions;
  const textOf = (content: { parts?: Array<{ text?: string }> } | undefined) => (content?.parts ?? []).map((p) => p.text ?? '').join('');
  if (req.path.endsWith(':embedContent')) {
    return sendJson(res, 200, { embedding: { values: fakeEmbedding(textOf(req.body?.content), dimsFor(req.body ?? {})) } });
  }
  const items: Array<{ content?: { parts?: Array<{ text?: string }> }; outputDimensionality?: number }> = req.body?.requests ?? [];
  return sendJson(res, 200, { embeddings: items.map((item) => ({ values: fakeEmbedding(textOf(item.content), dimsFor(item)) })) });
}

async function sendTranscription(ctx: ReplyContext, reply: TranscriptionReply) {
  const { req, res } = ctx;
  if (reply.delayMs) await sleep(reply.delayMs);
  if (reply.status) return sendJson(res, reply.status, errorBody('openai.transcriptions', reply.status, reply.errorMessage ?? 'Transcription failed.'));
  const body = req.body as MultipartBody;
  const size = body.files?.[0]?.size ?? 0;
  const text = reply.text ?? 'This is a fake transcript.';
  const duration = reply.duration ?? Math.round((size / 32_000) * 100) / 100;
  if (body.fields?.response_format !== 'verbose_json') return sendJson(res, 200, { text });
  return sendJson(res, 200, {
    task: 'transcribe',
    language: reply.language ?? 'english',
    duration,
    text,
    segments: [
      { id: 0, seek: 0, start: 0, end: duration, text, tokens: [1, 2, 3], temperature: 0, avg_logprob: -0.2, compression_ratio: 1.1, no_speech_prob: 0.01 },
    ],
  });
}

// ---------------------------------------------------------------------------------------------
// Streaming, bodies and deterministic helpers
// ---------------------------------------------------------------------------------------------

async function streamEvents(ctx: ReplyContext, events: SseEvent[], plan: ReplyPlan, errorEvent: SseEvent) {
  const { res } = ctx;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...plan.headers });
  res.flushHeaders();
  const closed = new AbortController();
  res.on('close', () => closed.abort());
  let sent = 0;
  for (const event of events) {
    if (event.content && plan.failAfterChunks !== undefined && sent >= plan.failAfterChunks) {
      if (plan.failMode === 'error-event') {
        res.end(frame(errorEvent));
      } else {
        // Let the chunks already written reach the client before cutting the connection.
        await sleep(20);
        cutByServer.add(ctx.req);
        res.socket?.destroy();
      }
      return;
    }
    if (event.content && plan.delayMs) {
      try {
        await sleep(plan.delayMs, undefined, { signal: closed.signal });
      } catch {
        return; // the client went away (abort)
      }
    }
    if (res.destroyed) return;
    res.write(frame(event));
    if (event.content && ++sent === 1) {
      try {
        plan.onFirstChunkWritten?.();
      } catch {
        // An observer's failure must not cut the reply.
      }
    }
  }
  res.end();
}

function frame(event: SseEvent): string {
  const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
  return `${event.event ? `event: ${event.event}\n` : ''}data: ${data}\n\n`;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers });
  res.end(payload);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  const boundary = /multipart\/form-data;.*boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType ?? '');
  if (boundary) return parseMultipart(raw, boundary[1] ?? boundary[2]!);
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Enough multipart/form-data for the SDK's FormData bodies: text fields and file parts. */
export function parseMultipart(raw: Buffer, boundary: string): MultipartBody {
  const out: MultipartBody = { fields: {}, files: [] };
  const delimiter = Buffer.from(`--${boundary}`);
  let start = raw.indexOf(delimiter);
  while (start !== -1) {
    const partStart = start + delimiter.length;
    if (raw.subarray(partStart, partStart + 2).toString() === '--') break; // closing delimiter
    const next = raw.indexOf(delimiter, partStart);
    if (next === -1) break;
    const part = raw.subarray(partStart + 2, next - 2); // drop the CRLF after the delimiter and before the next
    const headerEnd = part.indexOf('\r\n\r\n');
    const head = part.subarray(0, headerEnd).toString('utf8');
    const content = part.subarray(headerEnd + 4);
    const name = /name="([^"]*)"/i.exec(head)?.[1] ?? '';
    const filename = /filename="([^"]*)"/i.exec(head)?.[1];
    if (filename !== undefined) {
      const contentType = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1]?.trim() ?? 'application/octet-stream';
      out.files.push({ field: name, filename, contentType, size: content.length });
    } else {
      const value = content.toString('utf8');
      const existing = out.fields[name];
      out.fields[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
    }
    start = next;
  }
  return out;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** Splits text into `count` nearly equal pieces (at least one piece, possibly empty). */
export function splitText(text: string, count: number): string[] {
  if (!text) return [];
  const n = Math.max(1, Math.min(count, text.length));
  const size = Math.ceil(text.length / n);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** The fake tokenizer: one token per whitespace-separated word (at least 1 for non-empty input). */
export function countTokens(text: string): number {
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  return words;
}

/**
 * Deterministic unit vector for a text: feature hashing of its lower-cased words, so texts that
 * share words are closer (cosine) than texts that do not — useful for retrieval tests.
 */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const word of words) {
    const digest = createHash('sha256').update(word).digest();
    for (let k = 0; k < 4; k++) {
      const index = digest.readUInt32BE(k * 4) % dimensions;
      vector[index]! += digest[16 + k]! & 1 ? 1 : -1;
    }
  }
  const norm = Math.hypot(...vector);
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  return vector.map((v) => v / norm);
}

// Prompt text extraction, per API ---------------------------------------------------------------

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- wire bodies are loosely shaped

function textOfContent(content: Json): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: Json) => {
      if (typeof part === 'string') return part;
      if (typeof part?.text === 'string') return part.text;
      if (part?.type === 'tool_result') return textOfContent(part.content);
      if (part?.functionResponse) return JSON.stringify(part.functionResponse.response ?? {});
      return '';
    })
    .join(' ');
}

function lastUserText(record: RecordedRequest): string | undefined {
  const body: Json = record.body;
  if (record.api === 'openai.chat' || record.api === 'anthropic.messages') {
    const messages: Json[] = body?.messages ?? [];
    const last = [...messages].reverse().find((m) => m.role === 'user' || m.role === 'tool');
    return last ? textOfContent(last.content) : undefined;
  }
  if (record.api === 'google.generate') {
    const contents: Json[] = body?.contents ?? [];
    const last = [...contents].reverse().find((c) => c.role === 'user');
    return last ? textOfContent(last.parts) : undefined;
  }
  return undefined;
}

function promptText(record: RecordedRequest): string {
  const body: Json = record.body;
  if (record.api === 'google.generate') {
    return [textOfContent(body?.systemInstruction?.parts), ...(body?.contents ?? []).map((c: Json) => textOfContent(c.parts))].join(' ');
  }
  const system = typeof body?.system === 'string' ? body.system : textOfContent(body?.system);
  return [system, ...(body?.messages ?? []).map((m: Json) => textOfContent(m.content))].join(' ');
}
