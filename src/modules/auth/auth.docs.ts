import { namedSchema, type OperationDocs, SESSION_ONLY } from '../../platform/openapi.js';
import { apiKeyOut, createApiKeyBody, createdApiKeyOut } from './api-keys.schemas.js';
import { registerBody } from './auth.schemas.js';
import { accountOut, userOut } from '../users/index.js';

const user = { id: 42, email: 'ana.silva@example.com', name: 'Ana Silva' };
const apiKey = {
  id: '0198f2d0-3e4f-7a5b-8c6d-7e8f9a0b1c2d',
  name: 'Reporting script',
  prefix: 'wsai_7Hq2',
  created_at: '2025-03-14T09:00:00.000Z',
  last_used_at: '2025-03-15T16:42:10.000Z',
  expires_at: '2025-12-31T23:59:59.000Z',
  workspace: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a',
  read_only: true,
};

namedSchema(userOut, 'User', { description: 'A person with an account.', example: user });
namedSchema(accountOut, 'Account', {
  description: 'The signed-in user\'s own account: a user and whether the email address is verified.',
  example: { ...user, email_verified: true },
});
namedSchema(registerBody, 'Registration', {
  description: 'A new account.',
  example: { email: 'ana.silva@example.com', password: 'correct-horse-battery-staple', name: 'Ana Silva' },
});
namedSchema(apiKeyOut, 'ApiKey', { description: 'A personal API key (never the key itself).', example: apiKey });
namedSchema(createdApiKeyOut, 'CreatedApiKey', {
  description: 'A new personal API key: the only answer that contains `key`.',
  example: { ...apiKey, last_used_at: null, key: 'wsai_7Hq2vXk9pLm3Rt8YwZ1aBc4DeF6gHi0J' },
});
namedSchema(createApiKeyBody, 'ApiKeyCreate', {
  description: 'A new personal API key; without `workspace` it reaches every workspace of its user.',
  example: { name: 'Reporting script', expires_at: '2025-12-31T23:59:59Z', workspace: apiKey.workspace, read_only: true },
});

const throttledLogin = 'THROTTLE_LOGIN per address and per client IP: 429 with Retry-After.';
const noKeys = 'Session tokens only: a personal API key gets 403 `api_key_not_allowed`.';
const account = { security: SESSION_ONLY };

export const authDocs: OperationDocs = {
  'POST /auth/users/': {
    operationId: 'auth_register',
    summary: 'Register an account',
    description:
      'Anyone. Registers an account (403 `signup_disabled` when ALLOW_SIGNUP is false) and mails an activation link; ' +
      'an address that has an account is 400 `email_taken`. With `invitation_token` (from an invitation mailed to ' +
      '`email`) the address is verified at once and no activation mail is sent, also when sign-up is closed; a token ' +
      'that is not a pending invitation for `email` is 400 `invalid_invitation_token`.',
    errors: { 400: ['email_taken', 'invalid_invitation_token'], 403: ['signup_disabled', 'api_key_not_allowed'] },
    responseExamples: { 201: user },
  },
  'POST /auth/token/login/': {
    operationId: 'auth_login',
    summary: 'Sign in (get a session token)',
    description:
      'Anyone. 400 `invalid_credentials` for a wrong password or an unknown email alike; 403 `email_not_verified` when ' +
      `REQUIRE_EMAIL_VERIFICATION is on and the address is not verified. ${throttledLogin}`,
    errors: { 400: ['invalid_credentials'], 403: ['email_not_verified'] },
    throttled: true,
    requestExample: { email: 'ana.silva@example.com', password: 'correct-horse-battery-staple' },
    responseExamples: { 200: { auth_token: '3f9a1c0e7b2d4c6a8e0f1a2b3c4d5e6f7a8b9c0d' } },
  },
  'POST /auth/token/logout/': {
    operationId: 'auth_logout',
    summary: 'Sign out (revoke this session token)',
    description: `The signed-in user; the token of the request stops working. ${noKeys}`,
    errors: { 403: ['api_key_not_allowed'] },
    ...account,
  },
  'GET /auth/users/me/': {
    operationId: 'auth_me',
    summary: 'Get your account',
    description: 'The signed-in user (session token or API key).',
  },
  'PATCH /auth/users/me/': {
    operationId: 'auth_me_update',
    summary: 'Update your name',
    description:
      'Partial update of `name`. `email` may only repeat the current address; another one is 400 ' +
      `\`email_change_requires_confirmation\` (use \`set_email/\`) and nothing is changed. ${noKeys}`,
    errors: { 400: ['email_change_requires_confirmation'], 403: ['api_key_not_allowed'] },
    requestExample: { name: 'Ana M. Silva' },
    ...account,
  },
  'PUT /auth/users/me/': {
    operationId: 'auth_me_replace',
    summary: 'Update your name (PUT)',
    description: `Same as PATCH. ${noKeys}`,
    errors: { 400: ['email_change_requires_confirmation'], 403: ['api_key_not_allowed'] },
    requestExample: { name: 'Ana M. Silva' },
    ...account,
  },
  'DELETE /auth/users/me/': {
    operationId: 'auth_me_delete',
    summary: 'Delete your account',
    description:
      'The signed-in user, with their current password (400 `invalid_password`). Someone who owns workspaces must ' +
      `transfer or delete them first (409 \`owns_workspaces\`). ${noKeys}`,
    errors: { 400: ['invalid_password'], 403: ['api_key_not_allowed'], 409: ['owns_workspaces'] },
    requestExample: { current_password: 'correct-horse-battery-staple' },
    ...account,
  },
  'POST /auth/users/set_password/': {
    operationId: 'auth_set_password',
    summary: 'Change your password',
    description:
      'The signed-in user, with the current password (400 `invalid_password`); the new one must pass the password ' +
      `rules (400 \`validation_error\`). Other session tokens are revoked; this one keeps working. ${noKeys}`,
    errors: { 400: ['invalid_password'], 403: ['api_key_not_allowed'] },
    requestExample: { current_password: 'correct-horse-battery-staple', new_password: 'a-longer-passphrase-2025' },
    ...account,
  },
  'POST /auth/users/reset_password/': {
    operationId: 'auth_reset_password',
    summary: 'Ask for a password reset link',
    description: `Anyone. Mails a single-use reset link when the address has an account; always 204. ${throttledLogin}`,
    throttled: true,
    requestExample: { email: 'ana.silva@example.com' },
  },
  'POST /auth/users/reset_password_confirm/': {
    operationId: 'auth_reset_password_confirm',
    summary: 'Set a new password with a reset link',
    description: 'Anyone with the `uid` and `token` of a reset mail; a wrong, used or expired link is 400 `invalid_token`.',
    errors: { 400: ['invalid_token'] },
    requestExample: { uid: '42', token: 'cf3a9d1e8b7c6a5f4e3d2c1b0a9f8e7d', new_password: 'a-longer-passphrase-2025' },
  },
  'POST /auth/users/activation/': {
    operationId: 'auth_activate',
    summary: 'Verify your email address',
    description:
      "Anyone with the uid and token of the activation mail (sent on registration). The token works once and expires " +
      'after EMAIL_TOKEN_TTL_SECONDS; otherwise 400 `invalid_token`.',
    errors: { 400: ['invalid_token'] },
    requestExample: { uid: '42', token: 'b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6' },
  },
  'POST /auth/users/resend_activation/': {
    operationId: 'auth_resend_activation',
    summary: 'Ask for a new activation link',
    description:
      'Anyone. Mails a new activation link when the address belongs to an account that is not verified yet; older ' +
      `links stop working. Always 204, so it does not reveal which addresses have accounts. ${throttledLogin}`,
    throttled: true,
    requestExample: { email: 'ana.silva@example.com' },
  },
  'POST /auth/users/set_email/': {
    operationId: 'auth_set_email',
    summary: 'Ask to change your email address',
    description:
      'The signed-in user. Mails a confirmation link to `new_email` and a notice to the current address; the current ' +
      'address stands until the link is used. 400 `invalid_password`, `email_taken`, `email_unchanged`. ' +
      `THROTTLE_LOGIN per address (the account's and the new one) and per client IP: 429 with Retry-After. ${noKeys}`,
    errors: { 400: ['invalid_password', 'email_taken', 'email_unchanged'], 403: ['api_key_not_allowed'] },
    throttled: true,
    requestExample: { current_password: 'correct-horse-battery-staple', new_email: 'ana@silva.example.com' },
    ...account,
  },
  'POST /auth/users/set_email/confirm/': {
    operationId: 'auth_set_email_confirm',
    summary: 'Confirm a new email address',
    description:
      'Anyone with the uid and token mailed to the new address, which is then verified. 400 `invalid_token` (wrong, ' +
      'used, expired or superseded link) or `email_taken` (the address was taken meanwhile).',
    errors: { 400: ['invalid_token', 'email_taken'] },
    requestExample: { uid: '42', token: 'e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0' },
  },
  'POST /auth/api-keys/': {
    operationId: 'api_keys_create',
    summary: 'Create a personal API key',
    description:
      'The signed-in user. The full key is in this answer only; store it now. `workspace` must be one you belong to ' +
      '(400 `invalid_workspace`); `expires_at` must be in the future; at most a fixed number of keys may be active ' +
      `(400 \`too_many_api_keys\`). ${noKeys}`,
    errors: { 400: ['invalid_workspace', 'too_many_api_keys'], 403: ['api_key_not_allowed'] },
    ...account,
  },
  'GET /auth/api-keys/': {
    operationId: 'api_keys_list',
    summary: 'List your API keys',
    description: `The signed-in user's keys, newest first; never the keys themselves. ${noKeys}`,
    errors: { 403: ['api_key_not_allowed'] },
    ...account,
  },
  'DELETE /auth/api-keys/:id/': {
    operationId: 'api_keys_revoke',
    summary: 'Revoke an API key',
    description: `The key's owner; it stops working at once. Another user's key is 404. ${noKeys}`,
    errors: { 403: ['api_key_not_allowed'] },
    ...account,
  },
};
