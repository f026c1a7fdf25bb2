import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How a model call ended. `stopped`: the user stopped the stream; `timeout`: a deadline passed. */
export type ModelCallOutcome = 'ok' | 'error' | 'stopped' | 'timeout';

/** One finished model call, as the service that made it saw it. */
export interface ModelCallRecord {
  kind: 'chat' | 'embedding' | 'transcription' | 'translation' | 'rerank';
  /** From the catalogue (openai, anthropic, ...): a bounded set. */
  provider: string;
  /** The catalogue's model id, never free text from a request. */
  model: string;
  outcome: ModelCallOutcome;
  durationSeconds: number;
  /** Seconds until the first token (chat streams); absent when none came. */
  firstTokenSeconds?: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/**
 * What the services report, in their own words: no prom-client or HTTP types cross this line,
 * and every label is from a bounded set (catalogue ids, enums, route patterns), never an id.
 */
export interface ServiceMetrics {
  modelCall(record: ModelCallRecord): void;
  /** An event stream opened; call the returned function once when it closes. */
  streamOpened(): () => void;
  /** A reply ended because its user stopped it. */
  streamStopped(): void;
  /** The client of an event stream went away before the reply ended. */
  clientDisconnected(): void;
  /** A model call or upload refused with 402 because the period's credit is used up. */
  creditRefused(): void;
  /** A call refused with 429 by the named limiter (chat_messages, login:ip, ...). */
  throttled(scope: string): void;
  /** A payment webhook delivery: its event type (handled ones, else `other`) and what became of it. */
  webhookEvent(type: string, outcome: string): void;
  /** A document's text was stored: pages extracted (1 for documents without pages) and chunks. */
  documentIngested(pages: number, chunks: number): void;
  /** The URL guard refused a URL (src/platform/fetch: invalid_url, scheme, port, address, ...). */
  urlRefused(reason: string): void;
}

/** What a finished model call used; anything not given counts as 0. */
export interface ModelCallUsage {
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
}

/** Starts the clock on one model call; the returned function records it once, when it has ended. */
export function timeModelCall(metrics: Pick<ServiceMetrics, 'modelCall'>, call: Pick<ModelCallRecord, 'kind' | 'provider' | 'model'>) {
  const started = performance.now();
  return (outcome: ModelCallOutcome, usage: ModelCallUsage = {}) =>
    metrics.modelCall({
      ...call,
      outcome,
      durationSeconds: (performance.now() - started) / 1000,
      inputTokens: usage.inputTokens ?? 0,
      outputTokens: usage.outputTokens ?? 0,
      costUsd: usage.costUsd ?? 0,
    });
}

/** Records nothing: for code built outside the composition root (unit tests of one piece). */
export const noServiceMetrics: ServiceMetrics = {
  modelCall: () => undefined,
  streamOpened: () => () => undefined,
  streamStopped: () => undefined,
  clientDisconnected: () => undefined,
  creditRefused: () => undefined,
  throttled: () => undefined,
  webhookEvent: () => undefined,
  documentIngested: () => undefined,
  urlRefused: () => undefined,
};

/** Connections of the database client, read at scrape time. */
export interface PoolStats {
  max: number;
  inUse: number;
  idle: number;
  waiting: number;
}

/** Values the registry reads from elsewhere when it is scraped (the database is the source of truth). */
export interface MetricsSources {
  /** Documents by processing status, across all workspaces (one GROUP BY). */
  documentsByStatus?: () => Promise<Array<{ status: string; count: number }>>;
  poolStats?: () => PoolStats;
}

const MODEL_LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];

/**
 * The one Prometheus registry of a process (API or worker), built here: process defaults, HTTP
 * requests by route pattern, the services' families (ServiceMetrics) and read-at-scrape gauges.
 * The job system adds the queue families to the same registry (queue-metrics.ts).
 */
export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method and route pattern',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });

  const modelCalls = new Counter({
    name: 'model_calls_total',
    help: 'Model calls by kind (chat, embedding, transcription, translation, rerank), provider, model and outcome (ok, error, stopped, timeout)',
    labelNames: ['kind', 'provider', 'model', 'outcome'] as const,
    registers,
  });
  const modelDuration = new Histogram({
    name: 'model_call_duration_seconds',
    help: 'Duration of model calls, from request to last token',
    labelNames: ['kind', 'provider', 'model', 'outcome'] as const,
    buckets: MODEL_LATENCY_BUCKETS,
    registers,
  });
  const firstToken = new Histogram({
    name: 'model_time_to_first_token_seconds',
    help: 'Seconds from the start of a chat model call to its first token',
    labelNames: ['provider', 'model'] as const,
    buckets: MODEL_LATENCY_BUCKETS,
    registers,
  });
  const modelLabels = ['kind', 'provider', 'model'] as const;
  const inputTokens = new Counter({ name: 'model_input_tokens_total', help: 'Input (prompt) tokens of model calls', labelNames: modelLabels, registers });
  const outputTokens = new Counter({ name: 'model_output_tokens_total', help: 'Output (completion) tokens of model calls', labelNames: modelLabels, registers });
  const cost = new Counter({ name: 'model_cost_usd_total', help: 'Cost of model calls in USD, at catalogue prices', labelNames: modelLabels, registers });
  const openStreams = new Gauge({ name: 'chat_streams_open', help: 'Chat replies being streamed (server-sent events) by this process', registers });
  const stops = new Counter({ name: 'chat_stream_stops_total', help: 'Replies that ended because their user stopped them', registers });
  const disconnects = new Counter({
    name: 'chat_stream_client_disconnects_total',
    help: 'Streams whose client went away before the reply ended (the reply is still generated and saved)',
    registers,
  });
  const creditRefusals = new Counter({ name: 'credit_refusals_total', help: 'Calls refused with 402 credit_exhausted', registers });
  const throttled = new Counter({
    name: 'throttled_requests_total',
    help: 'Calls refused with 429 by limiter scope',
    labelNames: ['scope'] as const,
    registers,
  });
  const webhookEvents = new Counter({
    name: 'webhook_events_total',
    help: 'Payment webhook deliveries by event type and outcome',
    labelNames: ['type', 'outcome'] as const,
    registers,
  });
  const pages = new Counter({ name: 'ingestion_pages_total', help: 'Pages of documents ingested (1 per document without pages)', registers });
  const chunks = new Counter({ name: 'ingestion_chunks_total', help: 'Chunks stored for ingested documents', registers });
  const urlRefusals = new Counter({
    name: 'url_fetch_refusals_total',
    help: 'URLs the fetch guard refused, by reason',
    labelNames: ['reason'] as const,
    registers,
  });

  const recorder: ServiceMetrics = {
    modelCall(record) {
      const labels = { kind: record.kind, provider: record.provider, model: record.model };
      modelCalls.inc({ ...labels, outcome: record.outcome });
      modelDuration.observe({ ...labels, outcome: record.outcome }, record.durationSeconds);
      if (record.firstTokenSeconds !== undefined) firstToken.observe({ provider: record.provider, model: record.model }, record.firstTokenSeconds);
      inputTokens.inc(labels, record.inputTokens);
      outputTokens.inc(labels, record.outputTokens);
      cost.inc(labels, record.costUsd);
    },
    streamOpened() {
      openStreams.inc();
      let open = true;
      return () => {
        if (open) openStreams.dec();
        open = false;
      };
    },
    streamStopped: () => stops.inc(),
    clientDisconnected: () => disconnects.inc(),
    creditRefused: () => creditRefusals.inc(),
    throttled: (scope) => throttled.inc({ scope }),
    webhookEvent: (type, outcome) => webhookEvents.inc({ type, outcome }),
    documentIngested(pageCount, chunkCount) {
      pages.inc(pageCount);
      chunks.inc(chunkCount);
    },
    urlRefused: (reason) => urlRefusals.inc({ reason }),
  };

  /** Registers the gauges read at scrape time; called once the database is open. */
  function observe(sources: MetricsSources): void {
    const { documentsByStatus, poolStats } = sources;
    if (documentsByStatus) {
      new Gauge({
        name: 'documents',
        help: 'Documents by processing status (pending, processing, ready, failed), read from the database at scrape time',
        labelNames: ['status'] as const,
        registers,
        async collect() {
          const rows = await documentsByStatus().catch(() => undefined);
          if (!rows) return;
          this.reset();
          for (const status of ['pending', 'processing', 'ready', 'failed']) this.set({ status }, 0);
          for (const row of rows) this.set({ status: row.status }, row.count);
        },
      });
    }
    if (poolStats) {
      new Gauge({
        name: 'db_pool_connections',
        help: 'Database connections by state (in_use, idle) and the pool size (max)',
        labelNames: ['state'] as const,
        registers,
        collect() {
          const stats = poolStats();
          this.set({ state: 'in_use' }, stats.inUse);
          this.set({ state: 'idle' }, stats.idle);
          this.set({ state: 'max' }, stats.max);
        },
      });
      new Gauge({
        name: 'db_pool_waiting',
        help: 'Queries waiting for a free database connection',
        registers,
        collect() {
          this.set(poolStats().waiting);
        },
      });
    }
  }

  return { registry, requests, duration, recorder, observe };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** True when `header` is `Bearer <token>`; compared in constant time (hashes of equal length). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : '';
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}

const UNAUTHORIZED_DETAIL = 'A valid metrics token is required.';
const UNAUTHORIZED_BODY = JSON.stringify({ detail: UNAUTHORIZED_DETAIL, code: 'not_authenticated' });
/** 401 (not the API's 403: this is a scraper's credential, and Prometheus expects the standard answer). */
const metricsTokenRequired = () => new AppError(401, 'not_authenticated', UNAUTHORIZED_DETAIL, undefined, { 'WWW-Authenticate': 'Bearer' });

export interface MetricsExposure {
  /** METRICS_TOKEN: `/metrics` on the API port then requires `Authorization: Bearer <token>`. */
  token?: string;
}

/**
 * Request counts for every route, and `/metrics` on the API port only when METRICS_TOKEN is set
 * (behind the bearer token). Without the token, `/metrics` is served by the METRICS_PORT listener
 * (server.ts) or not at all: the API port answers 404 as for any unknown path.
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, exposure: MetricsExposure = {}): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    if (route === '/metrics') return;
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.requests.inc(labels);
    metrics.duration.observe(labels, reply.elapsedTime / 1000);
  });

  const { token } = exposure;
  if (!token) return;
  app.get('/metrics', { schema: { hide: true }, config: { auth: 'none' } }, async (request, reply) => {
    if (!bearerMatches(request.headers.authorization, token)) throw metricsTokenRequired();
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}

/**
 * A bare `/metrics` and `/healthz` server: the API's METRICS_PORT listener and the worker's
 * WORKER_METRICS_PORT. With a token, `/metrics` requires it here too.
 */
export async function serveMetrics(metrics: Metrics, port: number, host: string, token?: string): Promise<Server> {
  const server = createServer((request: IncomingMessage, response) => {
    if (request.method !== 'GET') {
      response.writeHead(405).end();
      return;
    }
    if (request.url === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (request.url !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not found.","code":"not_found"}');
      return;
    }
    if (token && !bearerMatches(request.headers.authorization, token)) {
      response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(UNAUTHORIZED_BODY);
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
