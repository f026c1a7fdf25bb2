/** The error responses of the OpenAPI document: one per status, its codes and an example; the Error schema. */
import type { RouteAuth } from './auth.js';
import type { ErrorCodes, ErrorStatus } from './openapi.js';

import { type Json, ref } from './openapi-ref.js';

const ERROR_TITLES: Record<ErrorStatus, string> = {
  400: 'Invalid request',
  402: 'Refused by the workspace plan or credit',
  403: 'Not authenticated or not allowed',
  404: 'Not found (or not visible to the caller)',
  409: 'Conflicts with the current state',
  410: 'Gone',
  413: 'Body too large',
  414: 'A path segment is too long',
  415: 'Unsupported media type',
  429: 'Throttled',
  500: 'Internal error (a fault of the service, logged under the X-Request-Id; nothing the client can fix)',
  502: 'An upstream provider failed',
  503: 'Temporarily unavailable',
  507: 'The file store is full',
};

const EXAMPLE_DETAILS: Record<string, string> = {
  validation_error: 'Invalid input in body.',
  not_authenticated: 'Authentication credentials were not provided.',
  not_found: 'Not found.',
  throttled: 'Request was throttled. Expected available in 12 seconds.',
  service_unavailable: 'Service temporarily unavailable, please retry.',
  server_error: 'Internal server error.',
  payload_too_large: 'Request body is too large.',
  unsupported_media_type: 'Unsupported media type in request.',
};

/** An error response: the Error schema, the codes it may carry in its description, and its headers. */
export function errorResponse(status: ErrorStatus, codes: readonly string[]): Json {
  const unique = [...new Set(codes)];
  const first = unique[0] ?? 'error';
  const headers: Json = {};
  if (status === 429) Object.assign(headers, { 'Retry-After': ref('headers', 'Retry-After'), ...rateLimitHeaders() });
  if (status === 503 || (status === 409 && unique.includes('idempotency_request_in_progress'))) {
    headers['Retry-After'] = ref('headers', 'Retry-After');
  }
  return {
    description: `${ERROR_TITLES[status]}. \`code\`: ${unique.map((code) => `\`${code}\``).join(', ')}.`,
    ...(Object.keys(headers).length ? { headers } : {}),
    content: {
      'application/json': {
        schema: ref('schemas', 'Error'),
        example: { detail: EXAMPLE_DETAILS[first] ?? `${ERROR_TITLES[status]}.`, code: first },
      },
    },
  };
}

export const rateLimitHeaders = () => ({
  'RateLimit-Limit': ref('headers', 'RateLimit-Limit'),
  'RateLimit-Remaining': ref('headers', 'RateLimit-Remaining'),
  'RateLimit-Reset': ref('headers', 'RateLimit-Reset'),
});

/** What the route's kind implies, whatever its own rules: authentication, input, bodies, faults, dependencies. */
export function commonErrors(route: { method: string; auth: RouteAuth; hasPathParams: boolean; idempotent: boolean }): ErrorCodes {
  const errors: Record<number, string[]> = {};
  const add = (status: ErrorStatus, ...codes: string[]) => (errors[status] ??= []).push(...codes);
  // The input gate and the schemas check every route's path, query, headers and body.
  add(400, 'validation_error');
  if (route.method !== 'GET') add(400, 'parse_error');
  if (route.auth === 'user') add(403, 'not_authenticated', 'authentication_failed', 'read_only_key', 'api_key_workspace_denied');
  if (route.auth === 'optional') add(403, 'authentication_failed');
  if (route.hasPathParams) add(404, 'not_found');
  if (route.method !== 'GET') add(413, 'payload_too_large');
  if (route.method !== 'GET') add(415, 'unsupported_media_type');
  if (route.idempotent) {
    add(400, 'validation_error');
    add(409, 'idempotency_key_reused', 'idempotency_request_in_progress');
  }
  add(500, 'server_error');
  add(503, 'service_unavailable');
  return errors as ErrorCodes;
}

/** One server-sent event of a streamed reply: `event: <name>` and one `data:` line of JSON. */

export const errorSchema = {
  type: 'object',
  description: 'Every error answer. `code` is stable and meant for programs; `detail` is for people.',
  required: ['detail', 'code'],
  properties: {
    detail: { type: 'string', description: 'What went wrong, in English.' },
    code: { type: 'string', description: 'Machine-readable reason, such as `not_found` or `credit_exhausted`.' },
    errors: {
      type: 'object',
      description: 'For validation errors: the messages of each field (dotted paths for nested fields).',
      additionalProperties: { type: 'array', items: { type: 'string' } },
    },
  },
  example: { detail: 'Invalid input in body.', code: 'validation_error', errors: { name: ['Required'] } },
};
