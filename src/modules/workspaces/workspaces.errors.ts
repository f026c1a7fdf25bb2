import { ConflictError, NotFoundError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';

export const workspaceErrors = {
  notMember: () =>
    new PermissionDeniedError('You are not a member of this workspace.', 'not_workspace_member'),
  archived: () =>
    new ConflictError('This workspace is archived; un-archive it before making changes.', 'workspace_archived'),
  ownerOrAdminOnly: () =>
    new PermissionDeniedError('Only the workspace owner or an admin can do this.', 'permission_denied'),
  ownerOnly: () => new PermissionDeniedError('Only the workspace owner can do this.', 'permission_denied'),
  ownerCannotLeave: () =>
    new PermissionDeniedError('The owner cannot leave the workspace; transfer ownership first.', 'owner_cannot_leave'),
  transferTargetNotMember: () =>
    new ValidationError(
      'The new owner must be another current member of the workspace.',
      { user: ['The new owner must be another current member of the workspace.'] },
      'invalid_new_owner',
    ),
  membershipNotFound: () => new NotFoundError('Membership not found.'),
  cannotChangeOwnRole: () => new PermissionDeniedError('You cannot change your own role.', 'cannot_change_own_role'),
  cannotChangeOwnerRole: () =>
    new PermissionDeniedError("The owner's role cannot be changed.", 'cannot_change_owner_role'),
  cannotRemoveOwner: () => new PermissionDeniedError('The owner cannot be removed.', 'cannot_remove_owner'),
  /** The request's API key is limited to another workspace (api-keys.policy.ts in auth refuses with it too). */
  apiKeyWorkspaceDenied: () =>
    new PermissionDeniedError('This API key is restricted to another workspace.', 'api_key_workspace_denied'),
};
