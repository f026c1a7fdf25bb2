import { NotFoundError, PermissionDeniedError, ValidationError } from '../../platform/errors.js';

export const kbErrors = {
  notFound: () => new NotFoundError('Knowledge base not found.'),
  readOnly: () => new PermissionDeniedError('You can read this knowledge base but not change it.', 'kb_read_only'),
  manageOnly: () =>
    new PermissionDeniedError(
      'Only the creator of the knowledge base or a workspace owner or admin can do this.',
      'permission_denied',
    ),
  unknownDocuments: (ids: string[]) =>
    new ValidationError(
      'Some documents do not exist in this workspace or are not visible to you.',
      { document_ids: [`Unknown or invisible documents: ${ids.join(', ')}`] },
      'invalid_documents',
    ),
  unknownKbs: (ids: string[], field = 'knowledge_base_ids') =>
    new ValidationError(
      'Some knowledge bases do not exist in this workspace or you may not use them.',
      { [field]: [`Unknown or inaccessible knowledge bases: ${ids.join(', ')}`] },
      'invalid_knowledge_bases',
    ),
  unknownTeam: () =>
    new ValidationError('The team does not exist in this workspace.', { team: ['The team does not exist in this workspace.'] }, 'invalid_team'),
  ruleNotFound: () =>
    new ValidationError('This team has no access rule on the knowledge base.', { team: ['No access rule for this team.'] }, 'rule_not_found'),
};
