import type { FastifyRequest } from 'fastify';
import type { AuthUser } from '../../platform/auth.js';
import { restrictRequestToWorkspace } from '../../platform/request-context.js';
import { apiKeyRefusalErrors } from './api-keys.errors.js';
import { refuseApiKeyRequest } from './api-keys.policy.js';

/**
 * The authentication hook's guard (registerAuthentication): applies api-keys.policy.ts to every
 * request made with an API key, and limits the rest of a workspace-restricted key's request to
 * its workspace (read by `requireMember` and the lists of the caller's workspaces).
 */
export function apiKeyGuard(user: AuthUser, request: FastifyRequest): void {
  const key = user.apiKey;
  if (!key) return;
  const refusal = refuseApiKeyRequest(key, {
    method: request.method,
    route: request.routeOptions.url ?? request.url,
    params: (request.params ?? {}) as Record<string, unknown>,
    query: (request.query ?? {}) as Record<string, unknown>,
  });
  if (refusal) throw apiKeyRefusalErrors[refusal]();
  if (key.workspaceId) restrictRequestToWorkspace(key.workspaceId);
}
