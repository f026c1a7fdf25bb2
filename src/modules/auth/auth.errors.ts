import { ConflictError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';

export const authErrors = {
  signupDisabled: () => new PermissionDeniedError('Sign-up is disabled on this server.', 'signup_disabled'),
  emailTaken: (field: 'email' | 'new_email' = 'email') =>
    new ValidationError('A user with that email already exists.', { [field]: ['A user with that email already exists.'] }, 'email_taken'),
  emailChangeRequiresConfirmation: () =>
    new ValidationError(
      'The email address cannot be changed here: use POST /auth/users/set_email/, which mails a confirmation link to the new address.',
      { email: ['Use POST /auth/users/set_email/; the new address must be confirmed.'] },
      'email_change_requires_confirmation',
    ),
  emailUnchanged: () =>
    new ValidationError(
      'This is already the email address of your account.',
      { new_email: ['This is already the email address of your account.'] },
      'email_unchanged',
    ),
  invalidEmailChangeToken: () =>
    new ValidationError(
      'Invalid, used or expired confirmation link.',
      { token: ['Invalid, used or expired confirmation link.'] },
      'invalid_token',
    ),
  invalidCredentials: () =>
    new ValidationError(
      'Unable to log in with provided credentials.',
      { non_field_errors: ['Unable to log in with provided credentials.'] },
      'invalid_credentials',
    ),
  wrongCurrentPassword: () =>
    new ValidationError('Invalid password.', { current_password: ['Invalid password.'] }, 'invalid_password'),
  invalidResetToken: () =>
    new ValidationError('Invalid or expired reset link.', { token: ['Invalid or expired reset link.'] }, 'invalid_token'),
  invalidActivationToken: () =>
    new ValidationError(
      'Invalid, used or expired activation link.',
      { token: ['Invalid, used or expired activation link.'] },
      'invalid_token',
    ),
  invalidInvitationToken: () =>
    new ValidationError(
      'This invitation link is not valid for this email address, or the invitation is no longer pending.',
      { invitation_token: ['Not a pending invitation for this email address.'] },
      'invalid_invitation_token',
    ),
  emailNotVerified: () =>
    new PermissionDeniedError(
      'Confirm your email address first: open the link in the activation mail, or ask for a new one with ' +
        'POST /auth/users/resend_activation/.',
      'email_not_verified',
    ),
  ownsWorkspaces: () =>
    new ConflictError(
      'You own workspaces. Transfer their ownership or delete them before deleting your account.',
      'owns_workspaces',
    ),
};
