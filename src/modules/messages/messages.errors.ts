/** The refusals of the messages module and what a failed reply tells the client. */
import { NotFoundError, PermissionDeniedError, SERVICE_UNAVAILABLE_DETAIL, ServiceUnavailableError, ValidationError } from '../../platform/errors.js';
import { isDependencyUnavailable } from '../../platform/faults.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { ModelCallError } from '../agents/index.js';
import { chatErrors } from '../chats/index.js';

export const messageErrors = {
  notFound: () => new NotFoundError('Message not found.'),
  notAuthor: () => new PermissionDeniedError('Only the author of a message can edit it.', 'not_message_author'),
  cannotRegenerate: () =>
    new PermissionDeniedError("Only the message's author or the chat's owner can regenerate.", 'permission_denied'),
  cannotDelete: () =>
    new PermissionDeniedError("Only the chat's owner can delete replies; user messages also by their author.", 'permission_denied'),
  notUserMessage: (field: string) =>
    new ValidationError('This must be a user message.', { [field]: ['This must be a user message.'] }, 'not_a_user_message'),
  notRateable: () =>
    new ValidationError('Only assistant messages can be rated.', { rating: ['Only assistant messages can be rated.'] }, 'not_rateable'),
  emptyMessage: () => new ValidationError('The message is empty.', { content: ['Write something or attach a file.'] }),
  taskNotFound: () => new NotFoundError('Task not found.'),
  streamNotFound: () => new NotFoundError('Stream not found.', 'stream_not_found'),
};

/** The foreign key from a message to its chat (drizzle/0002_chats.sql). */
const CHAT_OF_MESSAGE = 'messages_session_id_chat_sessions_id_fk';

/**
 * For a user message's insert: the chat was deleted after it was loaded (from the cache, within
 * the time an invalidation takes to arrive), which answers as if it had been gone before (404).
 */
export function chatGoneAsNotFound(error: unknown): never {
  throw isForeignKeyViolation(error, CHAT_OF_MESSAGE) ? chatErrors.notFound() : error;
}

/** Shown to the user when the model fails mid-way; the cause goes to the log only. */
export const GENERIC_MODEL_FAILURE = ModelCallError.DETAIL;
/** Shown when a reply fails for a reason that is neither the model nor an unreachable dependency. */
export const GENERIC_REPLY_FAILURE = 'The reply could not be completed. Please try again.';

/** A model provider failure (502 `model_failed`): already logged where it happened. */
export const isModelFailure = (error: unknown): boolean => error instanceof ModelCallError;

/**
 * What a stream's `error` event says about a failed generation (the JSON endpoints answer the
 * same cases with 502 `model_failed`, 503 `service_unavailable` or 500): the model failed, the
 * database or Redis could not be reached (saving the reply, say), or something else went wrong.
 */
export function replyFailureDetail(error: unknown): string {
  // First: a model provider that cannot be reached is a model failure, not ours.
  if (error instanceof ModelCallError) return GENERIC_MODEL_FAILURE;
  if (error instanceof ServiceUnavailableError && error.code === 'service_unavailable') return SERVICE_UNAVAILABLE_DETAIL;
  if (isDependencyUnavailable(error)) return SERVICE_UNAVAILABLE_DETAIL;
  return GENERIC_REPLY_FAILURE;
}
