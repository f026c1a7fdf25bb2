import { AppError, ConflictError, NotFoundError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';
import type { InvitationStatus } from './invitations.schemas.js';

export const invitationErrors = {
  notFound: () => new NotFoundError('Invitation not found.'),
  notPending: (status: InvitationStatus) =>
    new ConflictError(`This invitation is no longer pending (it was ${status}).`, 'invitation_not_pending'),
  // 410 Gone: the invitation existed but can never be used again; ask for a new one.
  expired: () =>
    new AppError(410, 'invitation_expired', 'This invitation has expired; ask for a new invitation.'),
  emailMismatch: () =>
    new PermissionDeniedError(
      'This invitation was sent to another email address than the one of your account. Sign in with the ' +
        'account of that address, or ask for an invitation to your own address.',
      'invitation_email_mismatch',
    ),
  emailNotVerified: () =>
    new PermissionDeniedError(
      'Confirm your email address first (activation mail, or POST /auth/users/resend_activation/), or use the ' +
        'link of the invitation mail, which carries a token.',
      'email_not_verified',
    ),
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
