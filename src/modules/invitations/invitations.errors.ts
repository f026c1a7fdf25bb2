import { AppError, ConflictError, NotFoundError, ValidationError } from '../../platform/errors.js';
import type { InvitationStatus } from './invitations.schemas.js';

export const invitationErrors = {
  notFound: () => new NotFoundError('Invitation not found.'),
  notPending: (status: InvitationStatus) =>
    new ConflictError(`This invitation is no longer pending (it was ${status}).`, 'invitation_not_pending'),
  // 410 Gone: the invitation existed but can never be used again; ask for a new one.
  expired: () =>
    new AppError(410, 'invitation_expired', 'This invitation has expired; ask for a new invitation.'),
  alreadyPending: () =>
    new ConflictError('A pending invitation for this email already exists.', 'invitation_pending'),
  alreadyMember: (target: 'workspace' | 'team') =>
    new ValidationError(
      `This person is already a member of the ${target}.`,
      { email: [`This person is already a member of the ${target}.`] },
      'already_member',
    ),
  inviteeNotWorkspaceMember: () =>
    new ValidationError(
      'Only members of the workspace can be invited to one of its teams; invite them to the workspace first.',
      { email: ['Only members of the workspace can be invited to one of its teams.'] },
      'invitee_not_workspace_member',
    ),
};
