import { NotFoundError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';

export const chatErrors = {
  notFound: () => new NotFoundError('Chat not found.'),
  ownerOnly: () => new PermissionDeniedError('Only the owner of this chat can do this.', 'not_chat_owner'),
  readOnly: () =>
    new PermissionDeniedError('You can read this chat but not write in it.', 'chat_read_only'),
  unknownModel: (id: string) =>
    new ValidationError(`Unknown model "${id}".`, { ai_model: [`Unknown model "${id}".`] }, 'unknown_model'),
  shareTargetInvalid: () =>
    new ValidationError(
      'A chat can be shared only with a current member of the workspace other than its owner.',
      { email: ['A chat can be shared only with a current member of the workspace other than its owner.'] },
      'invalid_share_target',
    ),
  shareNotFound: () =>
    new ValidationError('This chat is not shared with that person.', { email: ['This chat is not shared with that person.'] }, 'share_not_found'),
};
