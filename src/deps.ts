import type { Logger } from 'pino';
import type { Config } from './config/env.js';
import type { Database, DbOrTx } from './db/client.js';
import { openServiceDatabase } from './db/open.js';
import { createInfrastructure, type Infrastructure } from './infrastructure.js';
import type { Mailer } from './platform/mail/port.js';
import { createSharedCache, type SharedCache } from './platform/cache/shared-cache.js';
import type { PubSub } from './platform/pubsub/port.js';
import type { EventBuffer } from './platform/event-buffer/port.js';
import { createJobSystem, type JobSystem } from './platform/queue/job-system.js';
import type { JobsFor } from './platform/queue/jobs.js';
import type { JobQueue, RecordOptions } from './platform/queue/port.js';
import { reportingRefusals } from './platform/ratelimit/rates.js';
import type { RateLimiter } from './platform/ratelimit/port.js';
import type { ObjectStorage } from './platform/storage/port.js';
import { deleteExpiredIdempotencyKeys } from './platform/idempotency/idempotency.js';
import { createMetrics, type Metrics, type ServiceMetrics } from './platform/metrics.js';
import { createApiKeysService, isApiKey } from './modules/auth/api-keys.service.js';
import { createCredentialVerifier } from './modules/auth/credentials.js';
import { createAuthService } from './modules/auth/auth.service.js';
import { createCreditService } from './modules/billing/credit/credit.service.js';
import { createPlanModelRules } from './modules/billing/index.js';
import { createChatsService } from './modules/chats/chats.service.js';
import type { KnowledgeSearch } from './modules/agents/knowledge-port.js';
import { createDocumentsService } from './modules/documents/documents.service.js';
import { ingestDocumentJob } from './modules/ingestion/ingestion.jobs.js';
import { createIngestionService } from './modules/ingestion/ingestion.service.js';
import { createEmbeddingsService, embeddingsBackfillJob } from './modules/embeddings/index.js';
import { createKnowledgeBasesService } from './modules/knowledge-bases/knowledge-bases.service.js';
import { createKnowledgeSearch } from './modules/knowledge-bases/knowledge-search.js';
import { createReranker } from './modules/knowledge-bases/reranker.js';
import { knowledgeBaseLinks } from './modules/knowledge-bases/index.js';
import { assertPublicUrl, classifyUrl, createSafeFetcher, type SafeFetcher, UrlNotAllowedError } from './platform/fetch/fetcher.js';
import { agentReplyJob } from './modules/messages/messages.jobs.js';
import { createMessagesService } from './modules/messages/messages.service.js';
import { createStreamControl } from './modules/messages/stream-control.js';
import { createModelRegistry } from './modules/models/providers.js';
import { createCheckoutService } from './modules/billing/checkout/checkout.service.js';
import { createPaymentProvider } from './modules/billing/payment-provider.js';
import { createWebhookService } from './modules/billing/webhook/webhook.service.js';
import { createPlanService, type DocumentUsage } from './modules/billing/plan/plan.service.js';
import { createPlanOverridesService } from './modules/billing/plan/plan-overrides.service.js';
import { createUsageService } from './modules/billing/usage/usage.service.js';
import { loadPlans, type Plans } from './modules/billing/plan/plans.js';
import { loadCatalog, type ModelCatalog } from './modules/models/catalog.js';
import { createModelsService } from './modules/models/models.service.js';
import { createInvitationsService } from './modules/invitations/invitations.service.js';
import { findLiveInvitationByTokenHash } from './modules/invitations/index.js';
import { createTeamMembershipsService } from './modules/teams/team-memberships.service.js';
import { createTeamsService } from './modules/teams/teams.service.js';
import { createUsersService } from './modules/auth/profile.service.js';
import { createMembershipsService } from './modules/workspaces/memberships.service.js';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.js';
import { countOwnedWorkspaces, type MemberAccessRemoval } from './modules/workspaces/index.js';
import { listMessagesOfChat } from './modules/messages/index.js';
import { removeUserFromWorkspaceTeams } from './modules/teams/index.js';
import { removeUserSharesInWorkspace } from './modules/chats/index.js';
import { createSpeechService } from './modules/speech/speech.service.js';

/**
 * The composition root: every adapter is chosen here, once, from configuration, and every
 * service receives exactly the dependencies it uses. Tests call `createDeps` with their own
 * config and may pass an already-open database.
 */
export interface Deps {
  config: Config;
  log: Logger;
  database: Database;
  mailer: Mailer;
  metrics: Metrics;
  /** How jobs reach a worker: in-process, or BullMQ when REDIS_URL is set. */
  queue: JobQueue;
  /** Background jobs, recorded in the database and delivered by `queue`: record, dispatch, run, reconcile. */
  jobs: Jobs;
  /** Messages between API processes (stream stop): in-process, or Redis. */
  pubsub: PubSub;
  /**
   * Credentials and memberships of this process, kept coherent with other processes through
   * `pubsub` (docs/decisions.md, "Auth and membership cache").
   */
  accessCache: SharedCache;
  /** Throttle counters: in-process, or Redis (shared by every API process). */
  limiter: RateLimiter;
  /** Recent events of chat streams, for reattaching: in-process, or Redis Streams (any API process). */
  eventBuffer: EventBuffer;
  /** Files: DATA_DIR/files with app-signed URLs, or S3 (STORAGE_BACKEND). */
  storage: ObjectStorage;
  /** Chat, embedding and transcription models with their prices (built-in + MODEL_CATALOG_FILE). */
  catalog: ModelCatalog;
  /** The four plans (built-in + PLANS_FILE). */
  plans: Plans;
  services: ReturnType<typeof createServices>;
  close(): Promise<void>;
}

export interface DepsOverrides {
  /** An open, migrated database (tests share one per worker); it is not closed by `close()`. */
  database?: Database;
  /** Adapters a test brings; like the database, they are not closed by `close()`. */
  queue?: JobQueue;
  pubsub?: PubSub;
  limiter?: RateLimiter;
  eventBuffer?: EventBuffer;
  storage?: ObjectStorage;
  mailer?: Mailer;
  /** The `search_knowledge_base` backend (tests may bring one); default: hybrid search of attached knowledge bases. */
  knowledge?: KnowledgeSearch;
  /** The SSRF-safe fetcher (tests inject one with their own DNS resolver). */
  fetcher?: SafeFetcher;
  /** `false`: chat list pages are not cached (bench:list measures the database path beside the cached one). */
  chatListCache?: false;
}

/**
 * Every background job of the service (DESIGN rule 7), declared once with `defineJob`
 * (usually in the module's `*.jobs.ts`). Handlers reach services through `deps()`: they only
 * run once `createDeps` has returned.
 */
function jobDefinitions(config: Config, deps: () => Deps) {
  return [
    agentReplyJob(() => deps().services.messages, { backoffMs: config.AGENT_TASK_RETRY_BACKOFF_MS }),
    ingestDocumentJob(() => deps().services.ingestion, { backoffMs: config.INGESTION_RETRY_BACKOFF_MS }),
    embeddingsBackfillJob(() => deps().services.embeddings),
  ] as const;
}

export type Jobs = JobSystem<ReturnType<typeof jobDefinitions>>;

/**
 * The jobs services record, typed structurally: through `Deps['jobs']` the job list's type would
 * depend on the services' types and the services' on it.
 */
type ServiceJobs = JobsFor<{ 'documents.ingest': { taskId: string }; 'chat.agent-reply': { taskId: string } }>;

function createServices(
  base: Pick<
    Deps,
    'config' | 'log' | 'database' | 'mailer' | 'catalog' | 'plans' | 'pubsub' | 'limiter' | 'eventBuffer' | 'storage' | 'accessCache'
  > & {
    jobs: ServiceJobs;
    metrics: ServiceMetrics;
    /** Queues an embedding generation's backfill (its payload type differs from ServiceJobs' task ids). */
    enqueueBackfill: (generation: number, jobId?: string) => Promise<void>;
  },
  overrides: DepsOverrides = {},
) {
  const { config, log, database, mailer, catalog, plans, pubsub, eventBuffer, storage, jobs, metrics, accessCache } = base;
  const db = database.db;
  const invalidate = accessCache.invalidate;
  // Every 429 of every throttle is counted by its scope, whichever service refused it.
  const limiter = reportingRefusals(base.limiter, metrics.throttled);
  const modelRegistry = createModelRegistry(config, catalog);
  const streams = createStreamControl({ pubsub, log: log.child({ module: 'streams' }) });
  const credit = createCreditService({
    db,
    plans,
    catalog,
    log: log.child({ module: 'credit' }),
    metrics,
    billingCache: accessCache.region('billing-inputs'),
  });
  const chats = createChatsService({
    db,
    catalog,
    credit,
    messagesOfChat: listMessagesOfChat,
    listCache: overrides.chatListCache === false ? undefined : accessCache.region('chat-lists'),
    invalidate,
  });
  // PGlite (WebAssembly) converts half floats in software: full-precision indexes are faster there.
  const vectorIndexStorage = database.kind === 'pglite' ? 'vector' : 'halfvec';
  const embeddings = createEmbeddingsService({ db, config, credit, modelRegistry, enqueueBackfill: base.enqueueBackfill, log: log.child({ module: 'embeddings' }), metrics, vectorIndexStorage });
  const knowledgeCache = accessCache.region<boolean>('chat-knowledge');
  const knowledge =
    overrides.knowledge ?? createKnowledgeSearch({ db, embeddings, log: log.child({ module: 'knowledge' }), metrics, reranker: createReranker(config), knowledgeCache });
  const allowedPrivateHosts = config.URL_FETCH_ALLOWED_PRIVATE_HOSTS;
  const fetcher = overrides.fetcher ?? createSafeFetcher({ allowedPrivateHosts, onRefused: metrics.urlRefused });
  const documents = createDocumentsService({
    knowledgeBases: knowledgeBaseLinks,
    db,
    config,
    plans,
    credit,
    limiter,
    storage,
    urls: {
      assertAllowed: (url) => {
        try {
          return assertPublicUrl(url, { allowedPrivateHosts });
        } catch (error) {
          if (error instanceof UrlNotAllowedError) metrics.urlRefused(error.reason);
          throw error;
        }
      },
      classify: (url) => classifyUrl(url.toString()),
    },
    jobs,
    log: log.child({ module: 'documents' }),
  });
  const documentUsage: DocumentUsage = documents.usage;
  /** A member who leaves or is removed loses their teams and chat shares in that workspace too. */
  const removeMemberAccess: MemberAccessRemoval = async (tx, workspaceId, userId) => {
    await removeUserFromWorkspaceTeams(tx, workspaceId, userId);
    await removeUserSharesInWorkspace(tx, workspaceId, userId);
  };
  const auth = createAuthService({
    db,
    config,
    mailer,
    limiter,
    log: log.child({ module: 'auth' }),
    findLiveInvitation: findLiveInvitationByTokenHash,
    countOwnedWorkspaces,
    invalidate,
  });
  const apiKeys = createApiKeysService({ db, invalidate });
  return {
    documents,
    knowledgeBases: createKnowledgeBasesService({ db, invalidate }),
    /** The `search_knowledge_base` backend the messages service uses. */
    knowledge,
    embeddings,
    ingestion: createIngestionService({
      db,
      config,
      plans,
      storage,
      fetcher,
      embeddings,
      log: log.child({ module: 'ingestion' }),
      metrics,
    }),
    credit,
    plan: createPlanService({ db, plans, credit, documentUsage }),
    planOverrides: createPlanOverridesService({ db, plans, invalidate }),
    usage: createUsageService({ db }),
    webhooks: createWebhookService({
      db,
      invalidate,
      secret: config.PAYMENT_WEBHOOK_SECRET,
      log: log.child({ module: 'billing' }),
      payloadRetentionDays: config.WEBHOOK_PAYLOAD_RETENTION_DAYS,
      metrics,
    }),
    checkout: createCheckoutService({
      db,
      plans,
      provider: createPaymentProvider(config),
      publicBaseUrl: config.publicBaseUrl,
      log: log.child({ module: 'billing' }),
    }),
    models: createModelsService({ db, catalog, planModelRules: createPlanModelRules(db, plans) }),
    chats,
    modelRegistry,
    streams,
    messages: createMessagesService({
      db,
      config,
      agentAsync: config.AGENT_ASYNC_ENABLED,
      catalog,
      credit,
      limiter,
      storage,
      modelRegistry,
      knowledge,
      streams,
      eventBuffer,
      chatCache: accessCache.region('chat-access'),
      touchChat: chats.touch,
      jobs,
      log: log.child({ module: 'messages' }),
      metrics,
    }),
    auth,
    apiKeys,
    /** The authentication hook's verifier: session tokens and API keys through the access cache. */
    credentials: createCredentialVerifier({
      sources: {
        lookupToken: auth.lookupToken,
        touchToken: auth.touchToken,
        lookupKey: apiKeys.lookup,
        touchKey: apiKeys.touch,
        isApiKey,
      },
      cache: accessCache,
      log: log.child({ module: 'auth' }),
    }),
    users: createUsersService({ db, invalidate }),
    workspaces: createWorkspacesService({ db, removeMemberAccess, invalidate }),
    memberships: createMembershipsService({ db, removeMemberAccess, invalidate }),
    teams: createTeamsService({ db }),
    teamMemberships: createTeamMembershipsService({ db }),
    invitations: createInvitationsService({ db, config, mailer, log: log.child({ module: 'invitations' }) }),
    speech: createSpeechService({
      db,
      config,
      catalog,
      credit,
      limiter,
      modelRegistry,
      log: log.child({ module: 'speech' }),
      metrics,
    }),
  };
}

/**
 * `opening`: the service's own database, already being opened and migrated by the caller
 * (`openServiceDatabase(config)`, which server.ts starts before loading this module); like the
 * one createDeps opens itself, it is closed by `close()`. Without it (and without
 * `overrides.database`) createDeps opens and migrates the configured database.
 */
export async function createDeps(config: Config, log: Logger, overrides: DepsOverrides = {}, opening?: Promise<Database>): Promise<Deps> {
  // Loaded before the database is awaited so a bad catalog or plans file fails fast at start-up.
  const catalog = loadCatalog(config.MODEL_CATALOG_FILE);
  const plans = loadPlans(config.PLANS_FILE, catalog);
  const ownsDatabase = !overrides.database;
  const database = overrides.database ?? (await (opening ?? openServiceDatabase(config)));

  const infrastructure = await createInfrastructure(config, log, database, overrides);
  const { queue, pubsub, limiter, eventBuffer, storage, mailer } = infrastructure;
  // Filled in below, before any job can run (handlers only run after startWorker).
  const late: { deps?: Deps } = {};
  const metrics = createMetrics();
  const definitions = jobDefinitions(config, () => {
    if (!late.deps) throw new Error('jobs ran before the dependencies were ready');
    return late.deps;
  });
  const jobs: Jobs = createJobSystem(definitions, {
    db: database.db,
    queue,
    log: log.child({ module: 'jobs' }),
    registry: metrics.registry,
    settings: {
      leaseSeconds: config.JOB_LEASE_SECONDS,
      reconcileIntervalSeconds: config.JOB_RECONCILE_INTERVAL_SECONDS,
      deliveryGraceSeconds: config.JOB_DELIVERY_GRACE_SECONDS,
      waitAlertSeconds: config.JOB_WAIT_ALERT_SECONDS,
      retentionDays: config.JOB_RETENTION_DAYS,
      concurrency: config.WORKER_CONCURRENCY,
    },
    maintenance: [
      { name: 'expired idempotency keys', run: () => deleteExpiredIdempotencyKeys(database.db, 10_000) },
      // Housekeeping only runs after createDeps has returned (the reconciler starts with the worker).
      { name: 'old webhook payloads', run: async () => late.deps?.services.webhooks.prunePayloads() },
    ],
  });
  const accessCache = createSharedCache({
    pubsub,
    log: log.child({ module: 'access-cache' }),
    enabled: config.ACCESS_CACHE_ENABLED,
    ttlMs: config.ACCESS_CACHE_TTL_SECONDS * 1000,
    maxEntries: config.ACCESS_CACHE_MAX_ENTRIES,
  });
  const base = { config, log, database, mailer, catalog, plans, queue, jobs, pubsub, limiter, eventBuffer, storage, accessCache };
  const deps: Deps = {
    ...base,
    metrics,
    services: createServices(
      {
        ...base,
        // The services' view of the job list: the task jobs they record in their transactions.
        jobs: {
          record: (tx: DbOrTx, name: 'documents.ingest' | 'chat.agent-reply', payload: { taskId: string }, options?: RecordOptions) =>
            jobs.record(tx, name, payload, options),
          dispatch: (recorded) => jobs.dispatch(recorded),
        } satisfies ServiceJobs,
        metrics: metrics.recorder,
        enqueueBackfill: async (generation, jobId) => {
          await jobs.enqueue('embeddings.backfill', { generation }, jobId ? { id: jobId } : {});
        },
      },
      overrides,
    ),
    async close() {
      // The queue first: running jobs finish while the database, storage and mail they use are open.
      const owned = (name: keyof Infrastructure) => !overrides[name];
      // The embedding generations' background check queues a job and reads the database.
      await deps.services.embeddings.settled();
      // Stops the reconciler and heartbeat; closes the queue (running jobs finish) unless a test brought it.
      await jobs.close({ closeQueue: owned('queue') });
      await accessCache.close();
      await Promise.all(
        (['pubsub', 'limiter', 'eventBuffer', 'storage', 'mailer'] as const)
          .filter(owned)
          .map((name) => infrastructure[name].close()),
      );
      if (ownsDatabase) await database.close();
    },
  };
  // Read at scrape time: documents by status from the database (so every process reports the
  // same, whatever ran the ingestion) and the connection pool of this process.
  metrics.observe({ documentsByStatus: () => deps.services.documents.countByStatus(), poolStats: () => database.poolStats() });
  late.deps = deps;
  return deps;
}
