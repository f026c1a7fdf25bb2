import { NotFoundError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';
import { workspaceErrors } from '../workspaces/index.js';
import type { ApiKeyRefusal } from './api-keys.policy.js';

export const apiKeyErrors = {
  notFound: () => new NotFoundError('API key not found.'),
  invalidWorkspace: () =>
    new ValidationError(
      'You are not a member of that workspace.',
      { workspace: ['You are not a member of that workspace.'] },
      'invalid_workspace',
    ),
  expiryNotInFuture: () =>
    new ValidationError('The expiry must be in the future.', { expires_at: ['The expiry must be in the future.'] }),
  tooMany: (limit: number) =>
    new ValidationError(`At most ${limit} API keys can be active at once; revoke one first.`, undefined, 'too_many_api_keys'),
};

/** The refusals of api-keys.policy.ts as HTTP errors (all 403). */
export const apiKeyRefusalErrors: Record<ApiKeyRefusal, () => PermissionDeniedError> = {
  api_key_not_allowed: () =>
    new PermissionDeniedError(
      'API keys cannot manage the account or its keys; sign in with your password for this.',
      'api_key_not_allowed',
    ),
  read_only_key: () => new PermissionDeniedError('This API key is read-only.', 'read_only_key'),
  api_key_workspace_denied: workspaceErrors.apiKeyWorkspaceDenied,
};
