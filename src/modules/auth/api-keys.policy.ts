import type { ApiKeyRestriction } from '../../platform/auth.js';
import { sameWorkspaceId as sameWorkspace } from '../workspaces/index.js';

/**
 * What a personal API key may do: pure rules, applied in two places only: the authentication
 * hook (api-keys.guard.ts: every request made with a key, before its route runs) and the
 * workspace guard (`requireMember`, for workspaces named by a body or reached through an object).
 *
 * 1. `/auth/*` (account management: profile, password, email, sessions, the keys themselves) is
 *    refused with 403 `api_key_not_allowed`, except `GET /auth/users/me/` (who am I).
 * 2. A read-only key gets 403 `read_only_key` on any method but GET, HEAD and OPTIONS.
 * 3. A key restricted to a workspace gets 403 `api_key_workspace_denied` when the request names
 *    another workspace: the workspace in the path (`/api/workspaces/{id}/...`), a `?workspace=`
 *    filter, a `workspace` in the body or form (through `requireMember`), and on the routes that
 *    reach beyond one workspace (creating a workspace, the invitation inbox `/api/invitations/`).
 *    Objects addressed by their own id (a team, a membership) in another workspace answer as they
 *    do to a non-member (404); lists of "your" workspaces, memberships and teams show only the
 *    key's workspace.
 */
export type ApiKeyRefusal = 'api_key_not_allowed' | 'read_only_key' | 'api_key_workspace_denied';

/** What the rules look at in a request. */
export interface RequestFacts {
  method: string;
  /** The route pattern as registered, such as `/api/workspaces/:ws/documents/`. */
  route: string;
  params: Record<string, unknown>;
  query: Record<string, unknown>;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The account routes a key may call. */
const ACCOUNT_ROUTES_FOR_KEYS = new Set(['GET /auth/users/me/', 'HEAD /auth/users/me/']);

/** Routes that act outside any one workspace, refused to a workspace-restricted key. */
const BEYOND_ONE_WORKSPACE = [/^POST \/api\/workspaces\/$/, /^[A-Z]+ \/api\/invitations\//];

/** The workspace a route's path names (`/api/workspaces/:id/...` or `/api/workspaces/:ws/...`), if any. */
export function workspaceInPath(route: string, params: Record<string, unknown>): string | undefined {
  const match = /^\/api\/workspaces\/:([A-Za-z_]+)\//.exec(route);
  if (!match) return undefined;
  const value = params[match[1]!];
  return typeof value === 'string' ? value : '';
}

/** The first rule a request made with `key` breaks, or null when the key allows it. */
export function refuseApiKeyRequest(key: ApiKeyRestriction, request: RequestFacts): ApiKeyRefusal | null {
  const route = `${request.method} ${request.route}`;
  if (request.route.startsWith('/auth/') && !ACCOUNT_ROUTES_FOR_KEYS.has(route)) return 'api_key_not_allowed';
  if (key.readOnly && !SAFE_METHODS.has(request.method)) return 'read_only_key';
  const only = key.workspaceId;
  if (only) {
    if (BEYOND_ONE_WORKSPACE.some((pattern) => pattern.test(route))) return 'api_key_workspace_denied';
    const inPath = workspaceInPath(request.route, request.params);
    if (inPath !== undefined && !sameWorkspace(inPath, only)) return 'api_key_workspace_denied';
    const filter = request.query.workspace;
    if (filter !== undefined && !sameWorkspace(filter, only)) return 'api_key_workspace_denied';
  }
  return null;
}
