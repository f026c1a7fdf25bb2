import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { Deps } from './deps.js';
import { apiKeyGuard } from './modules/auth/api-keys.guard.js';
import { apiKeysRoutes } from './modules/auth/api-keys.routes.js';
import { authRoutes } from './modules/auth/auth.routes.js';
import { checkoutRoutes } from './modules/billing/checkout/checkout.routes.js';
import { planRoutes } from './modules/billing/plan/plan.routes.js';
import { usageRoutes } from './modules/billing/usage/usage.routes.js';
import { chatsRoutes } from './modules/chats/chats.routes.js';
import { documentsRoutes } from './modules/documents/documents.routes.js';
import { knowledgeBasesRoutes } from './modules/knowledge-bases/knowledge-bases.routes.js';
import { messagesRoutes } from './modules/messages/messages.routes.js';
import { webhookRoutes } from './modules/billing/webhook/webhook.routes.js';
import { modelsRoutes } from './modules/models/models.routes.js';
import { invitationsRoutes } from './modules/invitations/invitations.routes.js';
import { speechRoutes } from './modules/speech/speech.routes.js';
import { teamMembershipsRoutes } from './modules/teams/team-memberships.routes.js';
import { teamsRoutes } from './modules/teams/teams.routes.js';
import { usersRoutes } from './modules/auth/profile.routes.js';
import { membershipsRoutes } from './modules/workspaces/memberships.routes.js';
import { workspacesRoutes } from './modules/workspaces/workspaces.routes.js';
import { openApiDocument } from './openapi.js';
import { registerAuthentication } from './platform/auth.js';
import { registerCors } from './platform/cors.js';
import { registerDocsUi } from './platform/docs-ui.js';
import { clientErrorHandler, frameworkErrors, registerErrorHandler } from './platform/error-handler.js';
import { registerHealth } from './platform/health.js';
import { registerIdempotency } from './platform/idempotency/idempotency.js';
import { registerInputGate } from './platform/input-gate.js';
import { registerMetrics } from './platform/metrics.js';
import { registerRequestTracing } from './platform/tracing.js';
import { serializerCompiler } from './platform/serializer.js';
import { rateLimitHeaders } from './platform/ratelimit/headers.js';
import { currentRequestContext, runWithRequestContext } from './platform/request-context.js';
import { requestTimeouts } from './platform/listen.js';
import { isLocalStorage } from './platform/storage/local.js';
import { localStorageRoutes } from './platform/storage/local.routes.js';

/**
 * Fastify's default schema compilers (ajv, fast-json-stringify), which it otherwise loads when the
 * instance is created: here they are loaded only if something ever asks for them, since every
 * route validates and serializes with zod (setValidatorCompiler / setSerializerCompiler below).
 */
const requireFromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type Factory = (...args: unknown[]) => unknown;
/** Fastify's selector of one kind: called once, it returns the factory Fastify calls per schema set. */
const lazyFactory = (name: string): Factory => {
  let factory: Factory | undefined;
  return (...args) => (factory ??= (requireFromFastify(name) as () => Factory)())(...args);
};
const lazyDefaultCompilers = {
  buildValidator: lazyFactory('@fastify/ajv-compiler'),
  buildSerializer: lazyFactory('@fastify/fast-json-stringify-compiler'),
} as CompilersFactory;

declare module 'fastify' {
  interface FastifyInstance {
    registeredRoutes: string[];
  }
}

/**
 * Builds the HTTP application in Fastify's load order: ecosystem plugins (OpenAPI), platform
 * (errors, metrics, health), then the API modules inside one encapsulated context that
 * requires authentication unless a route says otherwise.
 */
export async function buildApp(deps: Deps): Promise<FastifyInstance> {
  const { config, services } = deps;
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    ...requestTimeouts(config.REQUEST_TIMEOUT_SECONDS),
    // X-Forwarded-For decides the client IP (per-IP throttles) only from proxies the operator names.
    trustProxy: config.TRUST_PROXY as FastifyServerOptions['trustProxy'],
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    // A closing app answers 503 in our shape (error-handler.ts), not in Fastify's.
    return503OnClosing: false,
    // Errors raised before any route runs (router: 414, bad URL; Node's parser: 431, 400) answer
    // in our {detail, code} shape too, never quoting the input.
    frameworkErrors,
    clientErrorHandler,
    schemaController: { compilersFactory: lazyDefaultCompilers },
  });

  // Every route as `METHOD /pattern`, for the role-matrix completeness test and diagnostics.
  const routes: string[] = [];
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push(`${method} ${route.url}`);
  });

  app.setValidatorCompiler(validatorCompiler);
  // zod for every response, except schemas marked plainResponse() (fast-json-stringify; serializer.ts).
  app.setSerializerCompiler(serializerCompiler);
  // Everything done for a request (jobs it records, say) can find its id.
  // The access cache rides along too: requireMember (a function every module calls) reads through it.
  app.addHook('onRequest', (request, _reply, done) =>
    runWithRequestContext({ requestId: request.id, accessCache: deps.accessCache }, done),
  );
  // A SERVER span per request when tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT); nothing otherwise.
  registerRequestTracing(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Throttled endpoints report their allowance on every answer, 429 included (streams: sse.ts).
    reply.headers(rateLimitHeaders(currentRequestContext()));
    // No response is ever to be sniffed into another type (errors and 404s included).
    reply.header('x-content-type-options', 'nosniff');
  });
  registerErrorHandler(app);
  // Before every route, so preflights are answered before authentication and errors carry the headers too.
  await registerCors(app, config.CORS_ALLOWED_ORIGINS);
  // NUL and lone surrogates in the body, query, path or headers of every route: 400.
  registerInputGate(app);

  await app.register(fastifySwagger, openApiDocument(config.publicBaseUrl));
  registerDocsUi(app, '/api/docs');
  app.get('/api/schema/', { schema: { hide: true } }, async () => app.swagger());

  // `/metrics` here only behind METRICS_TOKEN; otherwise on METRICS_PORT (server.ts) or nowhere.
  registerMetrics(app, deps.metrics, { token: config.METRICS_TOKEN });
  registerHealth(app, {
    database: () => deps.database.ping(),
    ...(config.REDIS_URL ? { redis: async () => void (await Promise.all([deps.queue.ping(), deps.pubsub.ping()])) } : {}),
    storage: () => deps.storage.ping(),
    // A process that runs no worker reports whether anyone runs the jobs it queues.
    ...(config.runWorkerInProcess ? {} : { workers: () => deps.jobs.checkWorkers() }),
  });
  // Local storage: the app serves the signed upload/download URLs itself (the signature is the
  // credential, so these routes sit outside the authenticated API context).
  const { storage } = deps;
  if (isLocalStorage(storage)) await app.register(localStorageRoutes, { storage });

  // Subscribed before the first request, so no stop request can arrive before we listen.
  await services.streams.listen();
  // The access cache serves only once it hears other processes' invalidations.
  await deps.accessCache.listen();

  await app.register(async (api) => {
    // Session tokens and personal API keys (recognised by their prefix) through one hook and the
    // access cache (deps.ts); the guard applies what a key restricts before any route runs.
    registerAuthentication(api, services.credentials, apiKeyGuard);
    // After authentication (keys belong to the user); routes opt in with config.idempotent.
    registerIdempotency(api, { db: deps.database.db, ttlSeconds: config.IDEMPOTENCY_TTL_SECONDS });
    await api.register(authRoutes, { auth: services.auth });
    await api.register(apiKeysRoutes, { apiKeys: services.apiKeys });
    await api.register(usersRoutes, { users: services.users });
    await api.register(workspacesRoutes, { workspaces: services.workspaces });
    await api.register(membershipsRoutes, { memberships: services.memberships });
    await api.register(planRoutes, { planService: services.plan });
    await api.register(usageRoutes, { usage: services.usage });
    await api.register(checkoutRoutes, { checkout: services.checkout });
    // Signed by the provider, no user (config auth: 'none'); keeps its JSON bodies raw.
    await api.register(webhookRoutes, { webhooks: services.webhooks });
    await api.register(modelsRoutes, { models: services.models });
    await api.register(chatsRoutes, { chats: services.chats });
    await api.register(knowledgeBasesRoutes, { kbs: services.knowledgeBases });
    await api.register(documentsRoutes, { documents: services.documents });
    await api.register(messagesRoutes, {
      messages: services.messages,
      maxFileBytes: Math.max(...Object.values(deps.plans).map((plan) => plan.max_file_size_bytes)),
      heartbeatMs: config.SSE_HEARTBEAT_SECONDS * 1000,
    });
    await api.register(teamsRoutes, { teams: services.teams });
    await api.register(teamMembershipsRoutes, { teamMemberships: services.teamMemberships });
    await api.register(invitationsRoutes, { invitations: services.invitations });
    await api.register(speechRoutes, { speech: services.speech });
  });

  return app;
}
