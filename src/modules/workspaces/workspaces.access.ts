import type { DbOrTx } from '../../db/client.js';
import { isUuid } from '../../platform/ids.js';
import { accessTags } from '../../platform/cache/shared-cache.js';
import { currentRequestContext, requestWorkspaceRestriction } from '../../platform/request-context.js';
import { workspaceErrors } from './workspaces.errors.js';
import { type MemberContext, reachesWorkspace } from './workspaces.policy.js';
import { findWorkspaceWithMembership, type MembershipRow, type WorkspaceRow } from './workspaces.repo.js';

/** The caller's standing in one workspace, as every workspace-scoped service sees it. */
export interface WorkspaceAccess extends MemberContext {
  workspace: WorkspaceRow;
  membership: MembershipRow;
}

export interface AccessOptions {
  /**
   * The operation writes or calls a model: refused with 409 `workspace_archived` while the
   * workspace is archived. Reading, updating the workspace itself, leaving and deleting pass `false`.
   */
  write?: boolean;
}

/**
 * The one guard every workspace-scoped module uses: a current member of the workspace or 403
 * (an unknown workspace looks the same as one you are not in), and no writes while archived.
 * A request made with an API key limited to another workspace gets 403 `api_key_workspace_denied`
 * (api-keys.policy.ts), whatever named the workspace: the path, a body field, the object reached.
 */
/** Whether the current request may reach `workspaceId` (always, unless its API key is limited to another). */
export function requestReaches(workspaceId: string): boolean {
  return reachesWorkspace(requestWorkspaceRestriction(), workspaceId);
}

/** 403 `api_key_workspace_denied` when the request's API key is limited to another workspace. */
export function assertRequestReaches(workspaceId: string): void {
  if (!requestReaches(workspaceId)) throw workspaceErrors.apiKeyWorkspaceDenied();
}

export async function requireMember(
  db: DbOrTx,
  workspaceId: string,
  userId: number,
  options: AccessOptions = {},
): Promise<WorkspaceAccess> {
  if (!isUuid(workspaceId)) throw workspaceErrors.notMember();
  assertRequestReaches(workspaceId);
  const found = await findMembership(db, workspaceId, userId);
  if (!found) throw workspaceErrors.notMember();
  if (options.write) assertWritable(found.workspace);
  return {
    workspace: found.workspace,
    membership: found.membership,
    userId,
    role: found.membership.role,
    isOwner: found.workspace.ownerId === userId,
  };
}

type Found = NonNullable<Awaited<ReturnType<typeof findWorkspaceWithMembership>>>;

/**
 * The workspace and membership, from the request's access cache when there is one (HTTP
 * requests; docs/decisions.md, "Auth and membership cache"), else from the database. Entries are
 * tagged with the workspace, the membership and the user, and dropped in every process by the
 * writers (workspaces.service.ts, memberships.service.ts, account deletion). "Not a member" is
 * never cached: a new membership works at once.
 */
async function findMembership(db: DbOrTx, workspaceId: string, userId: number): Promise<Found | undefined> {
  const cache = currentRequestContext()?.accessCache;
  if (!cache) return findWorkspaceWithMembership(db, workspaceId, userId);
  const id = workspaceId.toLowerCase();
  return cache.region<Found>('memberships').through(`${id}:${userId}`, async () => {
    const found = await findWorkspaceWithMembership(db, id, userId);
    if (!found) return undefined;
    // Shared by every request the entry answers: nobody may change it.
    Object.freeze(found.workspace);
    Object.freeze(found.membership);
    return {
      value: Object.freeze(found),
      tags: [accessTags.workspace(id), accessTags.membership(id, userId), accessTags.user(userId)],
    };
  });
}

/** 409 `workspace_archived` when the workspace is archived. */
export function assertWritable(workspace: Pick<WorkspaceRow, 'status'>): void {
  if (workspace.status === 'archived') throw workspaceErrors.archived();
}
