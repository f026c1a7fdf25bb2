/**
 * Public API of the workspaces module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Membership checks (`requireMember`, `assertWritable`), the owner/admin rule, roles, the
 * workspace path parameter and the workspace errors.
 */
export { assertWritable, requireMember, type WorkspaceAccess } from './workspaces.access.js';
export { workspaceErrors } from './workspaces.errors.js';
export { isOwnerOrAdmin, type MemberContext } from './workspaces.policy.js';
export { workspaceIdParams, workspaceRoles } from './workspaces.schemas.js';
