import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { createKbBody, kbOut, teamAccessOut } from './knowledge-bases.schemas.js';

const kb = {
  id: '0198f310-8d9e-7f0a-9b1c-2d3e4f5a6b7c',
  workspace: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a',
  name: 'Customer policies',
  description: 'Refunds, shipping and warranty terms.',
  is_shared_with_workspace: true,
  created_by: 42,
  document_count: 12,
  created_at: '2025-03-10T08:00:00.000Z',
  updated_at: '2025-03-14T09:41:00.000Z',
};

namedSchema(kbOut, 'KnowledgeBase', { description: 'A collection of documents that chats can search and cite.', example: kb });
namedSchema(createKbBody, 'KnowledgeBaseCreate', {
  description: 'A new knowledge base.',
  example: { name: kb.name, description: kb.description, is_shared_with_workspace: true },
});
namedSchema(teamAccessOut, 'TeamAccessRule', {
  description: "A team's read or write access to a knowledge base.",
  example: {
    id: '0198f311-9e0f-7a1b-8c2d-3e4f5a6b7c8d',
    team: '0198f2e0-4f5a-7b6c-8d7e-9f0a1b2c3d4e',
    team_name: 'Billing specialists',
    permission: 'write',
    created_at: '2025-03-11T12:00:00.000Z',
  },
});

const readers =
  'Readers: the creator, the workspace owner and admins, every member when it is shared with the workspace, and ' +
  'teams with an access rule; others get 404.';
const writers =
  'Writers: the creator, the workspace owner and admins, and teams with a `write` rule (403 `kb_read_only` for ' +
  'readers).';
const managers = 'The creator or the workspace owner or an admin (403 `permission_denied`).';
const member = { 403: ['not_workspace_member'] };
const write = { 403: ['not_workspace_member', 'kb_read_only'], 409: ['workspace_archived'] };
const update = { 403: ['not_workspace_member', 'kb_read_only', 'permission_denied'], 409: ['workspace_archived'] };
const sharing = 'Changing `is_shared_with_workspace` needs the creator or the workspace owner or an admin (403 `permission_denied`).';
const manage = { 403: ['not_workspace_member', 'permission_denied'], 409: ['workspace_archived'] };
const chatAccess = 'The chat must be one the caller can write in (its owner or a sharee: 403 `chat_read_only` otherwise).';

export const knowledgeBasesDocs: OperationDocs = {
  'GET /api/workspaces/:ws/knowledge-bases/': {
    operationId: 'knowledge_bases_list',
    summary: 'List knowledge bases',
    description: `Any member: the knowledge bases they can read. ${readers}`,
    errors: member,
  },
  'POST /api/workspaces/:ws/knowledge-bases/': {
    operationId: 'knowledge_bases_create',
    summary: 'Create a knowledge base',
    description: 'Any member; the caller is its creator.',
    errors: { 403: ['not_workspace_member'], 409: ['workspace_archived'] },
  },
  'GET /api/workspaces/:ws/knowledge-bases/:id/': {
    operationId: 'knowledge_bases_get',
    summary: 'Get a knowledge base',
    description: readers,
    errors: member,
  },
  'PUT /api/workspaces/:ws/knowledge-bases/:id/': {
    operationId: 'knowledge_bases_replace',
    summary: 'Update a knowledge base (PUT)',
    description: `Same as PATCH. ${writers} ${sharing}`,
    errors: update,
    requestExample: { name: kb.name, description: 'Refunds, shipping, warranty and returns terms.', is_shared_with_workspace: true },
  },
  'PATCH /api/workspaces/:ws/knowledge-bases/:id/': {
    operationId: 'knowledge_bases_update',
    summary: 'Update a knowledge base',
    description: `${writers} ${sharing}`,
    errors: update,
    requestExample: { description: 'Refunds, shipping, warranty and returns terms.' },
  },
  'DELETE /api/workspaces/:ws/knowledge-bases/:id/': {
    operationId: 'knowledge_bases_delete',
    summary: 'Delete a knowledge base',
    description: `${managers} The documents stay in the workspace.`,
    errors: manage,
  },
  'POST /api/workspaces/:ws/knowledge-bases/:id/add-documents/': {
    operationId: 'knowledge_bases_add_documents',
    summary: 'Add documents to a knowledge base',
    description: `${writers} The documents must be in the workspace and visible to the caller (400 \`invalid_documents\`).`,
    errors: { ...write, 400: ['invalid_documents'] },
    requestExample: { document_ids: ['0198f300-7c8d-7e9f-8a0b-1c2d3e4f5a6b'] },
  },
  'POST /api/workspaces/:ws/knowledge-bases/:id/remove-documents/': {
    operationId: 'knowledge_bases_remove_documents',
    summary: 'Remove documents from a knowledge base',
    description: `${writers} The documents stay in the workspace. 400 \`invalid_documents\` for unknown ones.`,
    errors: { ...write, 400: ['invalid_documents'] },
    requestExample: { document_ids: ['0198f300-7c8d-7e9f-8a0b-1c2d3e4f5a6b'] },
  },
  'GET /api/workspaces/:ws/knowledge-bases/:id/documents/': {
    operationId: 'knowledge_bases_documents',
    summary: "List a knowledge base's documents",
    description: readers,
    errors: member,
  },
  'GET /api/workspaces/:ws/knowledge-bases/:id/team-access/': {
    operationId: 'knowledge_bases_team_access_list',
    summary: "List a knowledge base's team access rules",
    description: readers,
    errors: member,
  },
  'POST /api/workspaces/:ws/knowledge-bases/:id/team-access/': {
    operationId: 'knowledge_bases_team_access_grant',
    summary: 'Give a team read or write access',
    description: `${managers} The team must be in the workspace (400 \`invalid_team\`); a second grant replaces the permission.`,
    errors: { ...manage, 400: ['invalid_team'] },
    requestExample: { team: '0198f2e0-4f5a-7b6c-8d7e-9f0a1b2c3d4e', permission: 'write' },
  },
  'DELETE /api/workspaces/:ws/knowledge-bases/:id/team-access/': {
    operationId: 'knowledge_bases_team_access_revoke',
    summary: "Remove a team's access",
    description: `${managers} 400 \`rule_not_found\` when the team has no rule.`,
    errors: { ...manage, 400: ['invalid_team', 'rule_not_found'] },
    requestExample: { team: '0198f2e0-4f5a-7b6c-8d7e-9f0a1b2c3d4e' },
  },
  'GET /api/workspaces/:ws/chats/:session/knowledge-bases/': {
    operationId: 'chat_knowledge_bases_list',
    summary: 'List the knowledge bases attached to a chat',
    description: 'Anyone who can read the chat; only the attached knowledge bases the caller can read are listed.',
    errors: member,
  },
  'POST /api/workspaces/:ws/chats/:session/knowledge-bases/attach/': {
    operationId: 'chat_knowledge_bases_attach',
    summary: 'Attach knowledge bases to a chat',
    description:
      `${chatAccess} The knowledge bases must be readable by the caller (400 \`invalid_knowledge_bases\`). Replies in ` +
      'the chat search them and cite what they use.',
    errors: { 400: ['invalid_knowledge_bases'], 403: ['not_workspace_member', 'chat_read_only'], 409: ['workspace_archived'] },
    requestExample: { knowledge_base_ids: [kb.id] },
  },
  'POST /api/workspaces/:ws/chats/:session/knowledge-bases/detach/': {
    operationId: 'chat_knowledge_bases_detach',
    summary: 'Detach knowledge bases from a chat',
    description: `${chatAccess} Knowledge bases that are not attached are ignored.`,
    errors: { 403: ['not_workspace_member', 'chat_read_only'], 409: ['workspace_archived'] },
    requestExample: { knowledge_base_ids: [kb.id] },
  },
};
