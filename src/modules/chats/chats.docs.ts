import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { chatOut, createChatBody, publicChatOut, shareOut, togglePublicOut, updateChatBody } from './chats.schemas.js';

const chat = {
  id: '0198f2b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b',
  workspace: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a',
  owner: 42,
  name: 'Refund policy questions',
  ai_model: 'gpt-4o-mini',
  ai_provider: 'openai',
  system_prompt: 'You answer questions about our customer policies. Cite the documents you use.',
  temperature: 0.3,
  agent_framework: 'tools',
  model_parameters: { max_tokens: 1024 },
  is_public: false,
  link_uuid: '0198f2b0-1c2d-7e3f-8a4b-aa6d7e8f9a11',
  created_at: '2025-03-14T09:26:53.589Z',
  updated_at: '2025-03-14T10:02:11.204Z',
};
const share = {
  id: '0198f2b6-0a1b-7c2d-8e3f-4a5b6c7d8e9f',
  user: { id: 57, email: 'maria.lopez@example.com', name: 'Maria Lopez' },
  created_at: '2025-03-14T11:15:00.000Z',
};

namedSchema(chatOut, 'Chat', { description: 'A conversation with an AI model in a workspace.', example: chat });
namedSchema(createChatBody, 'ChatCreate', {
  description: 'A new chat; every field is optional (the model defaults to the plan\'s first model).',
  example: { name: 'Refund policy questions', ai_model: 'gpt-4o-mini', system_prompt: chat.system_prompt, temperature: 0.3 },
});
namedSchema(updateChatBody, 'ChatUpdate', {
  description: 'The fields to change; the others keep their value.',
  example: { name: 'Refunds (EU customers)', temperature: 0.2 },
});
namedSchema(togglePublicOut, 'ChatVisibility', {
  description: 'Whether the chat is public, and its shared link id.',
  example: { is_public: true, link_uuid: chat.link_uuid },
});
namedSchema(shareOut, 'ChatShare', { description: 'A person a chat is shared with (they may read and write in it).', example: share });
namedSchema(publicChatOut, 'PublicChat', {
  description: 'The public view of a chat: its name, model and messages; nothing that identifies people or settings.',
  example: {
    name: chat.name,
    ai_model: chat.ai_model,
    ai_provider: chat.ai_provider,
    is_public: true,
    created_at: chat.created_at,
    messages: [
      {
        id: '0198f2c4-5a90-7e11-8b3c-1a2b3c4d5e6f',
        role: 'user',
        content: 'How long do customers have to ask for a refund?',
        parent: null,
        stopped: false,
        created_at: '2025-03-14T09:27:10.000Z',
      },
    ],
  },
});

const member = 'Any member of the workspace';
const ownerOnly = 'Only the chat\'s owner (403 `not_chat_owner`); other members who can read the chat get 403, others 404.';

export const chatsDocs: OperationDocs = {
  'GET /api/workspaces/:ws/chats/': {
    operationId: 'chats_list',
    summary: 'List chats',
    description:
      `${member}: the chats they own, the chats shared with them and the workspace's public chats, newest first. ` +
      'Not a member (or an unknown workspace): 403 `not_workspace_member`.',
    errors: { 403: ['not_workspace_member'] },
  },
  'POST /api/workspaces/:ws/chats/': {
    operationId: 'chats_create',
    summary: 'Create a chat',
    description:
      `${member}; the caller owns the new chat. \`ai_model\` must be in the model catalog (400 \`unknown_model\`) and ` +
      'in the workspace plan (402 `model_not_in_plan`); `model_parameters` are checked against what the model accepts ' +
      '(400 `validation_error`). An archived workspace refuses changes (409 `workspace_archived`).',
    errors: {
      400: ['unknown_model'],
      402: ['model_not_in_plan'],
      403: ['not_workspace_member'],
      409: ['workspace_archived'],
    },
    requestExample: { name: chat.name, ai_model: chat.ai_model, temperature: 0.3 },
  },
  'GET /api/workspaces/:ws/chats/:id/': {
    operationId: 'chats_get',
    summary: 'Get a chat',
    description: `${member} who can read the chat (its owner, a sharee, or anyone when it is public); otherwise 404.`,
    errors: { 403: ['not_workspace_member'] },
  },
  'PUT /api/workspaces/:ws/chats/:id/': {
    operationId: 'chats_replace',
    summary: 'Update a chat (PUT)',
    description: `Same as PATCH: the fields sent are changed, the others keep their value. ${ownerOnly}`,
    errors: {
      400: ['unknown_model'],
      402: ['model_not_in_plan'],
      403: ['not_workspace_member', 'not_chat_owner'],
      409: ['workspace_archived'],
    },
  },
  'PATCH /api/workspaces/:ws/chats/:id/': {
    operationId: 'chats_update',
    summary: 'Update a chat',
    description: `Changes the fields sent. ${ownerOnly} The model rules are those of create.`,
    errors: {
      400: ['unknown_model'],
      402: ['model_not_in_plan'],
      403: ['not_workspace_member', 'not_chat_owner'],
      409: ['workspace_archived'],
    },
    requestExample: { name: 'Refunds (EU customers)' },
  },
  'DELETE /api/workspaces/:ws/chats/:id/': {
    operationId: 'chats_delete',
    summary: 'Delete a chat',
    description: `Deletes the chat with its messages and shares. ${ownerOnly}`,
    errors: { 403: ['not_workspace_member', 'not_chat_owner'], 409: ['workspace_archived'] },
  },
  'POST /api/workspaces/:ws/chats/:id/toggle-public/': {
    operationId: 'chats_toggle_public',
    summary: 'Make a chat public or private',
    description:
      'Flips `is_public`. A public chat is readable by every member and by anyone with its shared link ' +
      `(\`GET /api/chats/shared/{link_uuid}/\`). ${ownerOnly}`,
    errors: { 403: ['not_workspace_member', 'not_chat_owner'], 409: ['workspace_archived'] },
  },
  'POST /api/workspaces/:ws/chats/:id/share/': {
    operationId: 'chats_share',
    summary: 'Share a chat with a member',
    description:
      'Gives a member of the workspace, named by email, read and write access: 201 when new, 200 when the chat was ' +
      `already shared with them. The person must be a member (400 \`invalid_share_target\`). ${ownerOnly}`,
    errors: { 400: ['invalid_share_target'], 403: ['not_workspace_member', 'not_chat_owner'], 409: ['workspace_archived'] },
    requestExample: { email: 'maria.lopez@example.com' },
  },
  'POST /api/workspaces/:ws/chats/:id/revoke-share/': {
    operationId: 'chats_revoke_share',
    summary: 'Stop sharing a chat with someone',
    description: `Removes a share by email; 400 \`share_not_found\` when the chat is not shared with them. ${ownerOnly}`,
    errors: { 400: ['share_not_found'], 403: ['not_workspace_member', 'not_chat_owner'], 409: ['workspace_archived'] },
    requestExample: { email: 'maria.lopez@example.com' },
  },
  'GET /api/workspaces/:ws/chats/:id/shares/': {
    operationId: 'chats_list_shares',
    summary: 'List the people a chat is shared with',
    description: `${ownerOnly}`,
    errors: { 403: ['not_workspace_member', 'not_chat_owner'] },
  },
  'GET /api/chats/shared/:link_uuid/': {
    operationId: 'chats_shared_view',
    summary: 'Read a chat by its shared link',
    description:
      'Anyone, without credentials, while the chat is public. Once it is private, only its owner and sharees who are ' +
      'still members of the workspace (signed in); everyone else gets 404, as for an unknown link. A token that is ' +
      'sent must be valid (403 `authentication_failed`).',
  },
};
