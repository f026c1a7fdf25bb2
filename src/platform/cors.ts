import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** Request headers a browser may send cross-origin (beyond the CORS-safelisted ones). */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'Last-Event-ID', 'X-Request-Id'];
/** Response headers a browser script may read. */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-Stream-Id',
  'Retry-After',
  'Idempotent-Replayed',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** How long a browser may cache a preflight answer (seconds; Chromium caps it at 7200). */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * `CORS_ALLOWED_ORIGINS` entries as browsers send them in `Origin` (`scheme://host[:port]`,
 * lower-case, no path). Anything else stops start-up with a message naming the variable.
 */
export function normaliseOrigins(entries: string[]): Set<string> {
  const origins = new Set<string>();
  for (const entry of entries) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    const bare = entry.replace(/\/+$/, '');
    if (!url || !['http:', 'https:'].includes(url.protocol) || url.origin.toLowerCase() !== bare.toLowerCase()) {
      throw new Error(`CORS_ALLOWED_ORIGINS: "${entry}" is not an origin such as https://app.example.com`);
    }
    origins.add(url.origin);
  }
  return origins;
}

/**
 * Cross-origin access for browsers, on every route (errors and 404s included): only the listed
 * origins, reflected in `Access-Control-Allow-Origin` (with `Vary: Origin`). Any other origin,
 * and any request without one, gets no CORS header at all, and its preflight is a plain 404.
 * Credentials are bearer tokens, never cookies, so `Access-Control-Allow-Credentials` is not sent.
 */
export async function registerCors(app: FastifyInstance, allowedOrigins: string[]): Promise<void> {
  const origins = normaliseOrigins(allowedOrigins);
  await app.register(fastifyCors, {
    origin: (origin, callback) => callback(null, origin !== undefined && origins.has(origin)),
    methods: METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    strictPreflight: true,
  });
}
