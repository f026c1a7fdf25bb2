import type { DbOrTx } from '../../db/client.js';
import { isUuid } from '../../platform/ids.js';
import { requestWorkspaceRestriction } from '../../platform/request-context.js';
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
  const found = await findWorkspaceWithMembership(db, workspaceId, userId);
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

/** 409 `workspace_archived` when the workspace is archived. */
export function assertWritable(workspace: Pick<WorkspaceRow, 'status'>): void {
  if (workspace.status === 'archived') throw workspaceErrors.archived();
}
