import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteAuth } from './auth.js';
import { commonErrors, errorResponse, errorSchema, rateLimitHeaders } from './openapi-errors.js';
import { type Json, ref } from './openapi-ref.js';
import { streamEventSchemas } from './openapi-stream.js';

export { commonErrors, errorResponse } from './openapi-errors.js';
export { eventStreamResponse, STREAM_EVENTS, STREAM_PROTOCOL } from './openapi-stream.js';

/*
 * The OpenAPI document. Route schemas (zod) give parameters, bodies and success responses; each
 * domain's `*.docs.ts` adds what a route schema cannot say: operationId, summary, description,
 * the errors the route's rules give, examples, streamed and multipart bodies. They are keyed by
 * the route as `registeredRoutes` names it (`METHOD /url`), so a route file stays as it is and
 * the coverage test (openapi.test.ts) names every route that has no entry.
 *
 * Nothing here runs on a request: docs are applied to the document only (error responses added
 * to a route's `schema.response` would change how Fastify serialises errors).
 */

export type ErrorStatus = 400 | 402 | 403 | 404 | 409 | 410 | 413 | 414 | 415 | 429 | 500 | 502 | 503 | 507;
/** The `code` values a route may answer with, by status. */
export type ErrorCodes = Partial<Record<ErrorStatus, readonly string[]>>;


export interface OperationDoc {
  /** Stable snake_case `<resource>_<action>`: generated clients name their methods after it. */
  operationId: string;
  summary: string;
  /** Who may call it and what it refuses (Markdown). */
  description: string;
  /** Errors of this route's own rules; those every route of its kind gives are added by `commonErrors`. */
  errors?: ErrorCodes;
  /** Counted against a per-user or per-IP rate (429 and the RateLimit-* headers). */
  throttled?: boolean;
  /** Example of the JSON request body. */
  requestExample?: unknown;
  /** Examples of the JSON success responses, by status. */
  responseExamples?: Record<number, unknown>;
  /** Request body media types the route schema does not describe (multipart, raw uploads), replacing those it does. */
  requestContent?: Record<string, Json>;
  /** Responses added or replaced as written (event streams, file downloads). */
  responses?: Record<string, Json>;
  /** Parameters the route schema does not declare (headers read by the handler). */
  parameters?: Json[];
  /** Security requirements when not the default for the route's `config.auth`. */
  security?: Array<Record<string, string[]>>;
}

/** Docs of one domain's routes, keyed `METHOD /url` exactly as the route is registered. */
export type OperationDocs = Record<string, OperationDoc>;

export interface TagDoc {
  name: string;
  description: string;
}

/** `METHOD /url`, as `app.registeredRoutes` lists routes. */
export const routeKey = (method: string, url: string) => `${method.toUpperCase()} ${url}`;

/** The document's path of a route: `:name` is `{name}`, a trailing wildcard `{path}`. */
export const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{path}');

/** Routes kept out of the document: infrastructure for operators, and the document itself. */
export const UNDOCUMENTED_ROUTES = ['GET /healthz', 'GET /readyz', 'GET /metrics', 'GET /api/schema/', 'GET /api/docs'];
export const isUndocumentedRoute = (key: string) =>
  UNDOCUMENTED_ROUTES.includes(key) || key.startsWith('GET /api/docs/') || key.startsWith('OPTIONS ') || key.startsWith('HEAD ');

/**
 * Names a schema in the document (`#/components/schemas/<id>`) with a description and an
 * example. Registers the very instance the routes use (no copy), so validation and
 * serialisation are unchanged; idempotent, for test workers that load modules once per file.
 */
export function namedSchema<T extends z.ZodType>(schema: T, id: string, meta: { description: string; example?: unknown }): T {
  if (!z.globalRegistry.has(schema)) {
    z.globalRegistry.add(schema, {
      id,
      description: meta.description,
      ...(meta.example === undefined ? {} : { examples: [meta.example] }),
    });
  }
  return schema;
}

// (The error responses are in openapi-errors.ts, the event stream in openapi-stream.ts.)

// --- the document's fixed parts ----------------------------------------------------------

const headerComponents = {
  'RateLimit-Limit': { description: 'Requests allowed in the current window.', schema: { type: 'integer', example: 20 } },
  'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer', example: 17 } },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer', example: 42 } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', example: 12 } },
  'Idempotent-Replayed': {
    description: '`true` when this answer is the stored answer of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
  'X-Stream-Id': {
    description: 'The id of this stream, for `POST .../messages/stream/stop/`.',
    schema: { type: 'string', example: 'a1b2c3d4e5f6' },
  },
};

const idempotencyKeyParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the first request with a key runs, and its 2xx answer is replayed (with ' +
    '`Idempotent-Replayed: true`) for the same key and the same request until the key expires ' +
    '(IDEMPOTENCY_TTL_SECONDS). The same key with another request is 409 `idempotency_key_reused`; a retry while ' +
    'the first is still running is 409 `idempotency_request_in_progress` with Retry-After.',
  schema: { type: 'string', minLength: 1, maxLength: 255, example: '5f0c8a52-4a8e-4c1e-9f57-0c6b1d2f3e4a' },
};

const SECURITY_SCHEMES = {
  sessionToken: {
    type: 'http' as const,
    scheme: 'bearer',
    description: 'A session token from `POST /auth/token/login/` (also accepted as `Authorization: Token <token>`).',
  },
  apiKey: {
    type: 'http' as const,
    scheme: 'bearer',
    bearerFormat: 'wsai_...',
    description:
      'A personal API key from `POST /auth/api-keys/`, sent as a bearer token. A key may be read-only (403 ' +
      '`read_only_key` on writes) or limited to one workspace (403 `api_key_workspace_denied` elsewhere).',
  },
};
const AUTHENTICATED = [{ sessionToken: [] }, { apiKey: [] }];

// --- applying the docs ---------------------------------------------------------------------

type SwaggerTransform = NonNullable<FastifyDynamicSwaggerOptions['transform']>;
type SwaggerTransformObject = NonNullable<FastifyDynamicSwaggerOptions['transformObject']>;

/** What the per-route transform hands the document transform (removed from the output). */
interface RouteFacts {
  key: string;
  method: string;
  auth: RouteAuth;
  idempotent: boolean;
}
const ROUTE_FACTS = 'x-route-facts';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export interface OpenApiOptions {
  info: { title: string; description: string; version: string; license?: { name: string; identifier: string } };
  serverUrl: string;
  tags: TagDoc[];
  docs: OperationDocs[];
}

/** The @fastify/swagger options: OpenAPI 3.2, the zod transforms, then the docs. */
export function openApiOptions(options: OpenApiOptions): FastifyDynamicSwaggerOptions {
  const docs: OperationDocs = Object.assign({}, ...options.docs);

  const transform: SwaggerTransform = (input) => {
    const result = jsonSchemaTransform(input as Parameters<typeof jsonSchemaTransform>[0]);
    const schema = result.schema as Json | undefined;
    if (!schema || schema.hide) return result;
    const method = [input.route.method].flat()[0] as string;
    if (isUndocumentedRoute(routeKey(method, input.url))) return { url: input.url, schema: { hide: true } };
    const config = (input.route.config ?? {}) as { auth?: RouteAuth; idempotent?: boolean };
    const facts: RouteFacts = {
      key: routeKey(method, input.url),
      method,
      auth: config.auth ?? 'user',
      idempotent: config.idempotent === true,
    };
    const doc = docs[facts.key];
    const withDoc: Json = { ...schema, [ROUTE_FACTS]: facts };
    if (doc) Object.assign(withDoc, { operationId: doc.operationId, summary: doc.summary, description: doc.description });
    withDoc.security = doc?.security ?? (facts.auth === 'user' ? AUTHENTICATED : facts.auth === 'optional' ? [{}, ...AUTHENTICATED] : []);
    return { url: openApiPath(input.url), schema: withDoc } as ReturnType<SwaggerTransform>;
  };

  const transformObject: SwaggerTransformObject = (input) => {
    const document = jsonSchemaTransformObject(input as Parameters<typeof jsonSchemaTransformObject>[0]) as Json;
    const components = (document.components ?? {}) as Json;
    document.servers = [{ url: options.serverUrl, description: 'This server' }];
    document.tags = options.tags;
    document.components = {
      ...components,
      securitySchemes: SECURITY_SCHEMES,
      schemas: { ...(components.schemas as Json), Error: errorSchema, ...streamEventSchemas },
      headers: headerComponents,
      parameters: { IdempotencyKey: idempotencyKeyParameter },
    };
    delete document.security;
    for (const pathItem of Object.values((document.paths ?? {}) as Record<string, Json>)) {
      for (const method of METHODS) {
        const operation = pathItem[method] as Json | undefined;
        if (operation) applyDoc(operation, docs);
      }
    }
    pruneUnusedSchemas(document);
    dropSafeIntegerBounds(document);
    return document as ReturnType<SwaggerTransformObject>;
  };

  return {
    openapi: { openapi: '3.2.0', info: options.info, components: { securitySchemes: SECURITY_SCHEMES } },
    transform,
    transformObject,
  };
}

/** Descriptions and examples of the parameters many routes share, by name (a route's own wording wins). */
const PARAMETER_DOCS: Record<string, { description: string; example: string | number }> = {
  ws: { description: 'The workspace id.', example: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a' },
  session: { description: 'The chat id.', example: '0198f2b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b' },
  id: { description: 'The id of the object the path names.', example: '0198f2b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b' },
  task_id: { description: 'The `agent_task_id` of a queued reply.', example: '0198f2c5-0a1b-7c2d-8e3f-4a5b6c7d8e9f' },
  invitationId: { description: 'The invitation id.', example: '0198f2f0-6b7c-7d8e-9f0a-1b2c3d4e5f60' },
  link_uuid: { description: "The chat's shared link id (`link_uuid`).", example: '0198f2b0-1c2d-7e3f-8a4b-aa6d7e8f9a11' },
  path: {
    description: 'The object key of the signed URL (may contain `/`); use the URL as given.',
    example: 'ws/0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a/0198f300-7c8d-7e9f-8a0b-1c2d3e4f5a6b',
  },
  limit: { description: 'Page size: 50 by default, at most 200.', example: 50 },
  offset: { description: 'How many items to skip.', example: 0 },
  workspace: { description: 'Only the objects of this workspace (you must be a member).', example: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a' },
  team: { description: 'Only the objects of this team.', example: '0198f2e0-4f5a-7b6c-8d7e-9f0a1b2c3d4e' },
};

function describeParameters(parameters: Json[]): void {
  for (const parameter of parameters) {
    const shared = typeof parameter.name === 'string' ? PARAMETER_DOCS[parameter.name] : undefined;
    if (!shared || parameter.$ref) continue;
    parameter.description ??= shared.description;
    // Ids are UUIDs but for users (`/api/users/{id}/`, a number whose schema is shorter).
    const maxLength = (parameter.schema as { maxLength?: number } | undefined)?.maxLength;
    const fits = typeof shared.example !== 'string' || maxLength === undefined || shared.example.length <= maxLength;
    parameter.example ??= fits ? shared.example : '42';
  }
}

function applyDoc(operation: Json, docs: OperationDocs): void {
  const facts = operation[ROUTE_FACTS] as RouteFacts;
  delete operation[ROUTE_FACTS];
  const doc = docs[facts.key];
  const parameters = (operation.parameters ?? []) as Json[];
  const responses = (operation.responses ?? {}) as Record<string, Json>;

  if (facts.idempotent) parameters.push(ref('parameters', 'IdempotencyKey'));
  if (doc?.parameters) parameters.push(...doc.parameters);
  describeParameters(parameters);
  if (parameters.length) operation.parameters = parameters;
  if (!doc) return;

  const body = operation.requestBody as { content: Record<string, Json> } | undefined;
  if (doc.requestContent) {
    operation.requestBody = { required: true, content: { ...body?.content, ...doc.requestContent } };
  } else if (body && doc.requestExample !== undefined && body.content['application/json']) {
    body.content['application/json'].example = doc.requestExample;
  }
  for (const [status, example] of Object.entries(doc.responseExamples ?? {})) {
    const media = (responses[status]?.content as Record<string, Json> | undefined)?.['application/json'];
    if (media) media.example = example;
  }
  for (const response of Object.values(responses)) {
    // A documented schema-less 2xx (204) keeps its plain description.
    if (response.description === 'Default Response') response.description = response.content ? 'Success.' : 'Done (no body).';
  }
  Object.assign(responses, doc.responses);

  const errors: Record<number, string[]> = {};
  const hasPathParams = parameters.some((parameter) => (parameter as { in?: string }).in === 'path');
  for (const source of [commonErrors({ ...facts, hasPathParams }), doc.errors ?? {}, doc.throttled ? { 429: ['throttled'] } : {}]) {
    for (const [status, codes] of Object.entries(source)) (errors[Number(status)] ??= []).push(...(codes ?? []));
  }
  for (const status of Object.keys(errors).map(Number).sort()) {
    responses[status] = errorResponse(status as ErrorStatus, errors[status]!);
  }
  for (const [status, response] of Object.entries(responses)) {
    if (!status.startsWith('2')) continue;
    if (doc.throttled) response.headers = { ...(response.headers as Json), ...rateLimitHeaders() };
    if (facts.idempotent) response.headers = { ...(response.headers as Json), 'Idempotent-Replayed': ref('headers', 'Idempotent-Replayed') };
  }
  operation.responses = responses;
}

/** Drops component schemas nothing refers to (the zod provider emits an input and an output copy of each). */
function pruneUnusedSchemas(document: Json): void {
  const components = document.components as { schemas: Record<string, unknown> };
  const used = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (!value || typeof value !== 'object') return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')) {
        const name = inner.slice('#/components/schemas/'.length);
        if (!used.has(name)) {
          used.add(name);
          visit(components.schemas[name]);
        }
      } else visit(inner);
    }
  };
  visit({ paths: document.paths, headers: (document.components as Json).headers, parameters: (document.components as Json).parameters });
  for (const name of Object.keys(components.schemas)) if (!used.has(name)) delete components.schemas[name];
}

/**
 * zod writes `z.number().int()` as bounded by ±(2^53 - 1); the docs UI then shows
 * -9007199254740991 as the example of every id and count. Those bounds say nothing to a client.
 */
function dropSafeIntegerBounds(value: unknown): void {
  if (Array.isArray(value)) return value.forEach(dropSafeIntegerBounds);
  if (!value || typeof value !== 'object') return;
  const schema = value as Json;
  if (schema.minimum === Number.MIN_SAFE_INTEGER) delete schema.minimum;
  if (schema.maximum === Number.MAX_SAFE_INTEGER) delete schema.maximum;
  Object.values(schema).forEach(dropSafeIntegerBounds);
}

/** Security of the routes a personal API key may not call (account management): session tokens only. */
export const SESSION_ONLY = [{ sessionToken: [] }];
