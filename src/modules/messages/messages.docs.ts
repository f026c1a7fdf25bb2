import {
  eventStreamResponse,
  namedSchema,
  type OperationDoc,
  type OperationDocs,
  STREAM_PROTOCOL,
} from '../../platform/openapi.js';
import { agentTaskOut, asyncSendOut, editBody, messageOut, regenerateBody, sendBody, stopBody } from './messages.schemas.js';

const reply = {
  id: '0198f2c4-5b1e-7c3a-9d2e-4f6a8b0c1d2e',
  session: '0198f2b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b',
  role: 'assistant',
  content: 'Our refund window is 30 days from the date of purchase [1].',
  author: null,
  parent: '0198f2c4-5a90-7e11-8b3c-1a2b3c4d5e6f',
  attachments: [],
  rating: null,
  reason: '',
  stopped: false,
  usage: { prompt_tokens: 412, completion_tokens: 17, total_tokens: 429 },
  ai_model: 'gpt-4o-mini',
  sources: [
    {
      document_id: '0198f300-7c8d-7e9f-8a0b-1c2d3e4f5a6b',
      document_name: 'Refund policy 2025.pdf',
      chunk_id: '0198f302-1b2c-7d3e-8f4a-5b6c7d8e9f0a',
      score: 0.032787,
      rerank_score: 0.91,
      page: 2,
    },
  ],
  created_at: '2025-03-14T09:27:12.000Z',
  updated_at: '2025-03-14T09:27:12.000Z',
};
const userMessage = {
  ...reply,
  id: '0198f2c4-5a90-7e11-8b3c-1a2b3c4d5e6f',
  role: 'user',
  content: 'How long do customers have to ask for a refund?',
  author: 42,
  parent: null,
  usage: null,
  ai_model: null,
  sources: [],
  created_at: '2025-03-14T09:27:10.000Z',
  updated_at: '2025-03-14T09:27:10.000Z',
};

namedSchema(messageOut, 'Message', { description: 'A message of a chat: a user message or a reply (`assistant`).', example: reply });
namedSchema(asyncSendOut, 'QueuedMessage', {
  description: 'The saved user message and the task that will write the reply (AGENT_ASYNC_ENABLED).',
  example: { ...userMessage, agent_task_id: '0198f2c5-0a1b-7c2d-8e3f-4a5b6c7d8e9f' },
});
namedSchema(sendBody, 'MessageSend', {
  description: 'A user message (JSON; send `multipart/form-data` to attach files).',
  example: { content: 'How long do customers have to ask for a refund?', stream_id: 'a1b2c3d4e5f6' },
});
namedSchema(regenerateBody, 'RegenerateRequest', {
  description: 'The user message whose reply is written again.',
  example: { user_message_id: userMessage.id, stream_id: 'a1b2c3d4e5f6' },
});
namedSchema(editBody, 'EditRequest', {
  description: 'The new text of your message; the replies after it are replaced by a new one.',
  example: { content: 'How long do EU customers have to ask for a refund?', stream_id: 'a1b2c3d4e5f6' },
});
namedSchema(stopBody, 'StopRequest', { description: 'The stream to stop.', example: { stream_id: 'a1b2c3d4e5f6' } });
namedSchema(agentTaskOut, 'AgentTask', {
  description: 'A reply being written in the background.',
  example: { task_id: '0198f2c5-0a1b-7c2d-8e3f-4a5b6c7d8e9f', status: 'SUCCESS', message_id: reply.id, error: null },
});

const writer = 'The chat\'s owner or a sharee (403 `chat_read_only` for members who can only read it; 404 for the others).';
const turnRules =
  "The chat's model must still be in the plan (402 `model_not_in_plan`); the reply's estimated cost is reserved " +
  "from the workspace credit first (402 `credit_exhausted`). THROTTLE_CHAT_MESSAGES per user (429). A model " +
  'failure is 502 `model_failed` (JSON answers only; a stream ends with an `error` event).';
const turnErrors = {
  402: ['credit_exhausted', 'model_not_in_plan'],
  403: ['not_workspace_member', 'chat_read_only'],
  409: ['workspace_archived'],
  502: ['model_failed'],
};
const attachmentRules =
  `\`multipart/form-data\`: the fields \`content\` (and optionally \`stream_id\`) and up to 5 files in the repeated ` +
  'field `files` (each within the plan\'s size per file: 402 `file_too_large`; another file field is 400, more files ' +
  '400 `too_many_files`). An empty message without files is 400.';

/** The multipart body of a send: the same fields as the JSON body, plus `files`. */
const sendContent = {
  // The route schema accepts a null body (multipart is read by the handler); JSON callers send an object.
  'application/json': {
    schema: { $ref: '#/components/schemas/MessageSendInput' },
    example: { content: 'How long do customers have to ask for a refund?' },
  },
  'multipart/form-data': {
    schema: {
      type: 'object',
      required: ['content'],
      properties: {
        content: { type: 'string', maxLength: 100000, description: 'The message text (may be empty when files are attached).' },
        stream_id: { type: 'string', maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'Your id for the stream.' },
        files: {
          type: 'array',
          maxItems: 5,
          description: 'Attachments: images go to the model, text and documents are read into the prompt.',
          items: { type: 'string', contentMediaType: 'application/octet-stream' },
        },
      },
    },
  },
};

const streamed = (doc: Omit<OperationDoc, 'responses'>): OperationDoc => ({
  ...doc,
  description: `${doc.description}\n\n${STREAM_PROTOCOL}`,
  responses: { 200: eventStreamResponse() },
});

const base = '/api/workspaces/:ws/chats/:session/messages';

export const messagesDocs: OperationDocs = {
  [`POST ${base}/stream/`]: streamed({
    operationId: 'messages_stream',
    summary: 'Send a message and stream the reply',
    description: `${writer} Saves the user message, then streams the reply. ${turnRules} ${attachmentRules}`,
    errors: { ...turnErrors, 400: ['too_many_files'], 402: [...turnErrors[402], 'file_too_large'] },
    throttled: true,
    requestContent: sendContent,
    responseExamples: { 201: reply },
  }),
  [`POST ${base}/stream/stop/`]: {
    operationId: 'messages_stream_stop',
    summary: 'Stop a streamed reply',
    description:
      `${writer} Asks the process that streams \`stream_id\` (any API process) to stop: the stream ends with \`done\` ` +
      'and `stopped: true`, and the text so far is saved and charged. 202 also when the stream has already ended.',
    errors: { 403: ['not_workspace_member', 'chat_read_only'] },
    responseExamples: { 202: { detail: 'Stop requested.' } },
  },
  [`GET ${base}/stream/:stream_id/`]: {
    operationId: 'messages_stream_reattach',
    summary: 'Reattach to a stream',
    description:
      'Anyone who may read the chat (404 for the others and for an unknown `stream_id`, `stream_not_found`). Replays ' +
      'the events of the stream after `Last-Event-ID` (the header, or `last_event_id`), or from the start, then ' +
      'follows it live until `done` or `error`, from whichever API process generates it. Every event carries its ' +
      '`id:` (1, 2, 3, ...), so a client that loses the connection again reattaches from the last id it saw. After ' +
      'the end it answers at once; once the buffer has expired (STREAM_BUFFER_TTL_SECONDS after the end) it answers ' +
      'a `done` rebuilt from the saved reply, without an `id:`.',
    errors: { 403: ['not_workspace_member'], 404: ['stream_not_found'] },
    responses: { 200: eventStreamResponse() },
  },
  [`POST ${base}/regenerate/stream/`]: streamed({
    operationId: 'messages_regenerate_stream',
    summary: 'Write a reply again and stream it',
    description:
      `${writer} Only the message's author or the chat's owner (403 \`permission_denied\`); \`user_message_id\` must be a ` +
      `user message of the chat (400 \`not_a_user_message\`). ${turnRules}`,
    errors: { ...turnErrors, 400: ['not_a_user_message'], 403: [...turnErrors[403], 'permission_denied'] },
    throttled: true,
    responseExamples: { 201: reply },
  }),
  [`POST ${base}/:id/edit/stream/`]: streamed({
    operationId: 'messages_edit_stream',
    summary: 'Edit your message and stream a new reply',
    description:
      `${writer} Only the message's author (403 \`not_message_author\`), only user messages (400 ` +
      `\`not_a_user_message\`). ${turnRules}`,
    errors: { ...turnErrors, 400: ['not_a_user_message'], 403: [...turnErrors[403], 'not_message_author'] },
    throttled: true,
    responseExamples: { 201: reply },
  }),
  [`POST ${base}/`]: {
    operationId: 'messages_send',
    summary: 'Send a message and get the reply as JSON',
    description:
      `${writer} Saves the user message and answers the reply (201). With AGENT_ASYNC_ENABLED the reply is written in ` +
      'the background: 202 with the user message and `agent_task_id` (follow `agent-task-status/{task_id}/`). ' +
      `${turnRules} ${attachmentRules}`,
    errors: { ...turnErrors, 400: ['too_many_files'], 402: [...turnErrors[402], 'file_too_large'] },
    throttled: true,
    requestContent: sendContent,
  },
  [`POST ${base}/regenerate/`]: {
    operationId: 'messages_regenerate',
    summary: 'Write a reply again (JSON)',
    description:
      `${writer} Only the message's author or the chat's owner (403 \`permission_denied\`); \`user_message_id\` must be a ` +
      `user message of the chat (400 \`not_a_user_message\`). ${turnRules}`,
    errors: { ...turnErrors, 400: ['not_a_user_message'], 403: [...turnErrors[403], 'permission_denied'] },
    throttled: true,
  },
  [`GET ${base}/`]: {
    operationId: 'messages_list',
    summary: 'List the messages of a chat',
    description: 'Anyone who can read the chat (its owner, a sharee, or any member when it is public); oldest first.',
    errors: { 403: ['not_workspace_member'] },
  },
  [`GET ${base}/agent-task-status/:task_id/`]: {
    operationId: 'messages_agent_task_status',
    summary: 'Follow a reply written in the background',
    description: 'Anyone who can read the chat; `message_id` is set once the reply is saved, `error` when it failed.',
    errors: { 403: ['not_workspace_member'] },
  },
  [`GET ${base}/:id/`]: {
    operationId: 'messages_get',
    summary: 'Get a message',
    description: 'Anyone who can read the chat.',
    errors: { 403: ['not_workspace_member'] },
  },
  [`PUT ${base}/:id/`]: {
    operationId: 'messages_replace',
    summary: 'Change the text of your message (PUT)',
    description: 'Same as PATCH.',
    requestExample: { content: 'How long do EU customers have to ask for a refund?' },
    errors: { 400: ['not_a_user_message'], 403: ['not_workspace_member', 'chat_read_only', 'not_message_author'], 409: ['workspace_archived'] },
  },
  [`PATCH ${base}/:id/`]: {
    operationId: 'messages_update',
    summary: 'Change the text of your message',
    description:
      `${writer} Only the author of a user message (403 \`not_message_author\`; 400 \`not_a_user_message\` for replies). ` +
      'The replies stay as they are; use `edit/stream/` for a new reply.',
    errors: { 400: ['not_a_user_message'], 403: ['not_workspace_member', 'chat_read_only', 'not_message_author'], 409: ['workspace_archived'] },
    requestExample: { content: 'How long do EU customers have to ask for a refund?' },
  },
  [`DELETE ${base}/:id/`]: {
    operationId: 'messages_delete',
    summary: 'Delete a message',
    description:
      `${writer} Replies are deleted by the chat's owner; a user message by its author or the chat's owner (403 ` +
      '`permission_denied`).',
    errors: { 403: ['not_workspace_member', 'chat_read_only', 'permission_denied'], 409: ['workspace_archived'] },
  },
  [`POST ${base}/:id/feedback/`]: {
    operationId: 'messages_feedback',
    summary: 'Rate a reply',
    description:
      'Anyone who can read the chat rates a reply `up` or `down` with an optional reason (`rating: null` clears it); ' +
      'user messages are 400 `not_rateable`.',
    errors: { 400: ['not_rateable'], 403: ['not_workspace_member'], 409: ['workspace_archived'] },
    requestExample: { rating: 'up', reason: 'Cited the right policy.' },
  },
};
