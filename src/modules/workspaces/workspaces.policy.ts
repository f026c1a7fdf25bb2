import type { WorkspaceRole } from './workspaces.schemas.js';

/** What the policy needs to know about the caller in one workspace. */
/** Two workspace ids name the same workspace (ids are UUIDs, compared without regard to case). */
export const sameWorkspaceId = (a: unknown, b: string): boolean => typeof a === 'string' && a.toLowerCase() === b.toLowerCase();

/** Whether a request limited to `onlyWorkspaceId` (undefined: not limited) may reach `workspaceId`. */
export function reachesWorkspace(onlyWorkspaceId: string | undefined, workspaceId: string): boolean {
  return onlyWorkspaceId === undefined || sameWorkspaceId(workspaceId, onlyWorkspaceId);
}

export interface MemberContext {
  userId: number;
  role: WorkspaceRole;
  isOwner: boolean;
}

/** "Owner or admin" in the spec: the owner, or a member whose role is admin. */
export const isOwnerOrAdmin = (actor: MemberContext): boolean => actor.isOwner || actor.role === 'admin';

export const canUpdateWorkspace = isOwnerOrAdmin;
export const canDeleteWorkspace = (actor: MemberContext): boolean => actor.isOwner;
export const canTransferOwnership = (actor: MemberContext): boolean => actor.isOwner;
export const canLeaveWorkspace = (actor: MemberContext): boolean => !actor.isOwner;

export type MembershipChangeRefusal = 'not_owner_or_admin' | 'own_role' | 'owner_role' | 'owner_removal';

/** PUT role: owner or admin; never your own role, never the owner's. */
export function refuseRoleChange(
  actor: MemberContext,
  target: { userId: number; isOwner: boolean },
): MembershipChangeRefusal | null {
  if (!isOwnerOrAdmin(actor)) return 'not_owner_or_admin';
  if (target.userId === actor.userId) return 'own_role';
  if (target.isOwner) return 'owner_role';
  return null;
}

/** DELETE membership: owner or admin; never the owner. */
export function refuseMemberRemoval(
  actor: MemberContext,
  target: { userId: number; isOwner: boolean },
): MembershipChangeRefusal | null {
  if (!isOwnerOrAdmin(actor)) return 'not_owner_or_admin';
  if (target.isOwner) return 'owner_removal';
  return null;
}
