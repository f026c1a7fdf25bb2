import { z } from 'zod';
import { parseRate } from '../platform/ratelimit/rates.js';
import { issueLines } from '../platform/zod-issues.js';

/**
 * Every environment variable the service reads, parsed and defaulted in one place.
 * `loadConfig` is pure (no file or network access) so tests can build a config from a plain object.
 * The README's configuration table documents each entry; keep the two in step.
 */

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'True', 'False'])
    .optional()
    .transform((v) => (v === undefined ? fallback : ['true', '1', 'yes', 'True'].includes(v)));

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const optionalUrl = optionalString.pipe(z.url().optional());

const providerModel = optionalString.pipe(
  z
    .string()
    .regex(/^[a-z][a-z0-9-]*:.+$/, 'must look like provider:model, for example openai:text-embedding-3-small')
    .optional(),
);

/** A DRF rate such as `20/minute`, checked by the same parser the rate limiter uses. */
const rate = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .superRefine((value, ctx) => {
      try {
        parseRate(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    });

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8000),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_BASE_URL: optionalUrl,
  DATA_DIR: z.string().min(1).default('./data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  DATABASE_URL: optionalUrl,
  REDIS_URL: optionalUrl,
  /** The embedded database's shared_buffers (MB); unset: twice its data, 16-128 MB (db/pglite-buffers.ts). */
  EMBEDDED_DB_SHARED_BUFFERS_MB: z.coerce.number().int().min(1).max(16_384).optional(),
  /** Connections in the PostgreSQL pool (per process). */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** Longest wait for a new PostgreSQL connection before the request fails with 503. */
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
  /** Longest a request waits for a connection of a full pool (a burst queues rather than fails) before 503. */
  DATABASE_POOL_WAIT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** Longest a single PostgreSQL query may take on the client side before it fails (a hung or partitioned server). */
  DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),
  /** Longest a Redis command on a request path may wait (Redis down or hung) before the request fails with 503. */
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(1500),
  /** Prefix of every Redis key the service writes (queues, rate limits, pub/sub channels). */
  REDIS_PREFIX: z.string().min(1).max(64).default('wsai'),
  SECRET_KEY: optionalString.pipe(z.string().min(32, 'must be at least 32 characters').optional()),

  STORAGE_BACKEND: z.enum(['local', 's3']).default('local'),
  S3_ENDPOINT: optionalUrl,
  S3_BUCKET: optionalString,
  S3_REGION: z.string().default('us-east-1'),
  S3_ACCESS_KEY_ID: optionalString,
  S3_SECRET_ACCESS_KEY: optionalString,
  S3_FORCE_PATH_STYLE: bool(false),

  SMTP_URL: optionalString.pipe(z.url().optional()),
  MAIL_FROM: z.string().min(3).default('Workspace AI <no-reply@localhost>'),

  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: optionalUrl,
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: optionalUrl,
  GOOGLE_GENERATIVE_AI_API_KEY: optionalString,
  GOOGLE_GENERATIVE_AI_BASE_URL: optionalUrl,
  OPENAI_COMPATIBLE_BASE_URL: optionalUrl,
  OPENAI_COMPATIBLE_API_KEY: optionalString,
  EMBEDDING_MODEL: providerModel,
  TRANSCRIPTION_MODEL: providerModel,
  TRANSLATION_MODEL: providerModel,
  /** Reranker of knowledge-search candidates as `provider:model` (cohere, jina, voyage, vllm, tei); unset: no reranking. */
  RERANK_MODEL: optionalString.pipe(
    z
      .string()
      .regex(/^(cohere|jina|voyage|vllm|tei):.+$/, 'must look like provider:model with provider cohere, jina, voyage, vllm or tei, for example cohere:rerank-v3.5')
      .optional(),
  ),
  /** Base URL of the reranker (`…/rerank` is appended): required for vllm and tei, overrides the others' default. */
  RERANK_BASE_URL: optionalUrl,
  /** Bearer token for a vllm or tei reranker that needs one. */
  RERANK_API_KEY: optionalString,
  COHERE_API_KEY: optionalString,
  JINA_API_KEY: optionalString,
  VOYAGE_API_KEY: optionalString,
  MODEL_CATALOG_FILE: optionalString,
  PLANS_FILE: optionalString,

  PAYMENT_WEBHOOK_SECRET: optionalString,
  STRIPE_SECRET_KEY: optionalString,
  STRIPE_API_BASE: optionalUrl,

  THROTTLE_CHAT_MESSAGES: rate('20/minute'),
  THROTTLE_TRANSCRIPTIONS: rate('10/minute'),
  THROTTLE_TRANSLATIONS: rate('20/minute'),
  THROTTLE_DOCUMENT_UPLOADS: rate('30/hour'),

  AGENT_ASYNC_ENABLED: bool(false),
  /** First retry delay of a failed async agent task (doubles per attempt; 3 attempts). */
  AGENT_TASK_RETRY_BACKOFF_MS: z.coerce.number().int().min(0).max(600_000).default(2000),
  /** First retry delay of a failed document ingestion (doubles per attempt; 3 attempts). */
  INGESTION_RETRY_BACKOFF_MS: z.coerce.number().int().min(0).max(600_000).default(5000),
  URL_FETCH_ALLOWED_PRIVATE_HOSTS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  YOUTUBE_BASE_URL: z.url().default('https://www.youtube.com'),

  ALLOW_SIGNUP: bool(true),
  /** When true, login is refused (403 email_not_verified) until the account's email is verified. */
  REQUIRE_EMAIL_VERIFICATION: bool(false),
  /** Lifetime of activation and email-change links in seconds (default 3 days). */
  EMAIL_TOKEN_TTL_SECONDS: z.coerce.number().int().positive().default(3 * 24 * 3600),
  /** Attempts per address and per client IP on login, password reset, activation resend and email change. */
  THROTTLE_LOGIN: rate('10/minute'),
  /**
   * Whose X-Forwarded-For to believe for the client IP (per-IP throttles, logs): `false` (none:
   * the peer address), `true` (any), a number of proxy hops, or comma-separated addresses/CIDRs
   * of the proxies. Behind a load balancer, set it, or every client shares the balancer's IP.
   */
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((v, ctx): boolean | number | string => {
      const value = v.trim();
      if (value === '' || value === 'false') return false;
      if (value === 'true') return true;
      if (/^\d+$/.test(value)) return Number(value);
      if (/^[0-9a-fA-F.:/,\s]+$/.test(value)) return value;
      ctx.addIssue({ code: 'custom', message: 'must be true, false, a hop count, or comma-separated addresses/CIDRs' });
      return z.NEVER;
    }),
  /** Origins browsers may call the API from (comma-separated, exact `scheme://host[:port]`); empty: none. */
  CORS_ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  /** Lifetime of an API token in seconds (default 30 days). */
  AUTH_TOKEN_TTL: z.coerce.number().int().positive().default(30 * 24 * 3600),
  INVITATION_TTL_SECONDS: z.coerce.number().int().positive().default(7 * 24 * 3600),
  /** Lifetime of a password-reset link in seconds. */
  PASSWORD_RESET_TTL_SECONDS: z.coerce.number().int().positive().default(3600),
  /** Largest upload the local storage backend accepts through a signed URL, in bytes (default 512 MiB). */
  STORAGE_MAX_UPLOAD_BYTES: z.coerce.number().int().positive().default(512 * 1024 * 1024),
  /** Lifetime of app-signed or presigned storage URLs in seconds. */
  STORAGE_URL_TTL_SECONDS: z.coerce.number().int().positive().max(7 * 24 * 3600).default(900),
  /** Jobs the worker runs at once (per process). */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** A running job renews its lease every third of this; a job whose lease ran out is presumed dead and re-driven. */
  JOB_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  /** How often each worker process (and the embedded process) looks for stranded jobs. */
  JOB_RECONCILE_INTERVAL_SECONDS: z.coerce.number().min(0.1).max(3600).default(10),
  /** A delivered job that has not started after this long is checked on the queue (and re-delivered when lost). */
  JOB_DELIVERY_GRACE_SECONDS: z.coerce.number().min(0).max(3600).default(30),
  /** `/readyz` fails its `workers` check when a job has waited this long and no worker is alive. */
  JOB_WAIT_ALERT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(30),
  /** Finished jobs are kept this many days (for operators), then deleted. */
  JOB_RETENTION_DAYS: z.coerce.number().int().min(1).max(365).default(7),
  /**
   * Bearer token `/metrics` requires (on the API port, METRICS_PORT and WORKER_METRICS_PORT); unset:
   * `/metrics` is not served on the API port (only on METRICS_PORT, when that is set).
   */
  METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  /** Port of a separate `/metrics` listener (on METRICS_HOST), instead of the API port. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Address the separate metrics listener binds to (default loopback only). */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** OTLP/HTTP endpoint for traces (e.g. http://otel-collector:4318); unset: tracing is off and costs nothing. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  /** service.name of the traces. */
  OTEL_SERVICE_NAME: z.string().min(1).default('workspace-ai-service'),
  /** Raw webhook payloads are kept this many days for replay (admin CLI), then cleared. */
  WEBHOOK_PAYLOAD_RETENTION_DAYS: z.coerce.number().int().min(0).max(3650).default(30),
  /** Port of the worker's own `/metrics` and `/healthz` (npm run worker); unset: none. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /**
   * Per-process cache of credentials (token or API key -> user) and workspace memberships
   * (docs/decisions.md, "Auth and membership cache"); false: every request reads the database.
   */
  ACCESS_CACHE_ENABLED: bool(true),
  /** Longest a cached credential or membership is served without reading the database (invalidations end it sooner). */
  ACCESS_CACHE_TTL_SECONDS: z.coerce.number().min(0.1).max(300).default(5),
  /** Entries per kind (credentials, memberships) kept at most per process; the least recently used go first. */
  ACCESS_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  /** How long an `Idempotency-Key` and its response are kept. */
  IDEMPOTENCY_TTL_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(24 * 3600),
  /** Run the job worker inside the API process (default: yes when REDIS_URL is unset). */
  RUN_WORKER_IN_PROCESS: optionalString.pipe(z.enum(['true', 'false']).optional()),
  /** Largest JSON request body accepted, in bytes. */
  BODY_LIMIT_BYTES: z.coerce.number().int().positive().default(1024 * 1024),
  /**
   * Longest a request may take to arrive, headers and body, before it is answered 408 and its
   * connection closed (slow or stalled clients hold a connection and memory). Its answer may take
   * longer (streams). 0: no limit on the whole request (Node's 60 s for the headers still
   * applies), for a proxy in front that enforces one.
   */
  REQUEST_TIMEOUT_SECONDS: z.coerce.number().min(0).max(86_400).default(300),
  /** Seconds between `: ping` comments on an idle event stream. */
  SSE_HEARTBEAT_SECONDS: z.coerce.number().min(0.05).max(300).default(15),
  /** Seconds a chat stream's events stay available for reattaching after its last event. */
  STREAM_BUFFER_TTL_SECONDS: z.coerce.number().min(0.1).max(86_400).default(600),
  /** Events kept per chat stream for reattaching (the oldest go first). */
  STREAM_BUFFER_MAX_EVENTS: z.coerce.number().int().min(10).max(1_000_000).default(10_000),
  /** Seconds to wait for streams and jobs to drain on shutdown. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().int().min(0).max(600).default(25),
});

export type Env = z.output<typeof envSchema>;

export interface Config extends Env {
  /** Where the service is reachable from outside; used in mail links and app-signed URLs. */
  publicBaseUrl: string;
  runWorkerInProcess: boolean;
}

export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`Invalid configuration:\n  ${issues.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  const parsed = envSchema.safeParse(source);
  if (!parsed.success) {
    throw new ConfigError(issueLines(parsed.error.issues));
  }
  const env = parsed.data;
  const issues: string[] = [];
  if (env.STORAGE_BACKEND === 's3') {
    for (const key of ['S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const) {
      if (!env[key]) issues.push(`${key}: required when STORAGE_BACKEND=s3`);
    }
  }
  if (env.RERANK_MODEL && /^(vllm|tei):/.test(env.RERANK_MODEL) && !env.RERANK_BASE_URL) {
    issues.push('RERANK_BASE_URL: required when RERANK_MODEL is a vllm or tei model');
  }
  if (issues.length) throw new ConfigError(issues);
  const displayHost = env.HOST === '0.0.0.0' || env.HOST === '::' ? 'localhost' : env.HOST;
  return {
    ...env,
    publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://${displayHost}:${env.PORT}`).replace(/\/+$/, ''),
    runWorkerInProcess: env.RUN_WORKER_IN_PROCESS ? env.RUN_WORKER_IN_PROCESS === 'true' : !env.REDIS_URL,
  };
}
