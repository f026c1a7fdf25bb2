/**
 * Public API of the workspaces module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Membership checks (`requireMember`, `assertWritable`), the owner/admin rule, roles, the
 * workspace path parameter and the workspace errors.
 */
export { assertRequestReaches, assertWritable, requestReaches, requireMember, type WorkspaceAccess } from './workspaces.access.js';
export { workspaceErrors } from './workspaces.errors.js';
export { isOwnerOrAdmin, type MemberContext, sameWorkspaceId } from './workspaces.policy.js';
export { workspaceIdParams, workspaceRoles } from './workspaces.schemas.js';
export type { MemberAccessRemoval } from './workspaces.repo.js';
/**
 * Workspace queries other modules run in their own transactions (each takes the db or tx first):
 * billing and speech read or lock the workspace row, chats and invitations check a membership,
 * invitations add one, teams limit lists to the caller's memberships.
 */
export {
  countOwnedWorkspaces,
  findWorkspace,
  findWorkspaceWithMembership,
  insertMembership,
  listWorkspaceRolesOfUser,
  lockWorkspace,
  membershipsSeenBy,
  type WorkspaceRow,
} from './workspaces.repo.js';
