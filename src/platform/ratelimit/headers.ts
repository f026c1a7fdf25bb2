import type { RequestContext } from '../request-context.js';

/**
 * The RateLimit-* response headers (IETF draft "RateLimit header fields for HTTP", the
 * separate-fields form) for the most restrictive throttle a request counted against; none when
 * it counted against none. `RateLimit-Reset` is whole seconds until the window ends.
 */
export function rateLimitHeaders(context: RequestContext | undefined): Record<string, string> {
  const state = context?.throttle;
  if (!state) return {};
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
}
