import { NotFoundError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';

export const teamErrors = {
  teamNotFound: () => new NotFoundError('Team not found.'),
  nameTaken: () =>
    new ValidationError(
      'A team with this name already exists in the workspace.',
      { name: ['A team with this name already exists in the workspace.'] },
      'team_name_taken',
    ),
  teamAdminOnly: () =>
    new PermissionDeniedError(
      'Only a team admin or the workspace owner or an admin can do this.',
      'permission_denied',
    ),
  membershipNotFound: () => new NotFoundError('Team membership not found.'),
  cannotChangeOwnRole: () =>
    new PermissionDeniedError(
      'You cannot change your own team role; ask the workspace owner or an admin.',
      'cannot_change_own_role',
    ),
};
