import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { authDocs } from './modules/auth/auth.docs.js';
import { billingDocs } from './modules/billing/billing.docs.js';
import { chatsDocs } from './modules/chats/chats.docs.js';
import { documentsDocs, filesDocs } from './modules/documents/documents.docs.js';
import { invitationsDocs } from './modules/invitations/invitations.docs.js';
import { knowledgeBasesDocs } from './modules/knowledge-bases/knowledge-bases.docs.js';
import { messagesDocs } from './modules/messages/messages.docs.js';
import { modelsDocs } from './modules/models/models.docs.js';
import { speechDocs } from './modules/speech/speech.docs.js';
import { teamMembershipsDocs, teamsDocs } from './modules/teams/teams.docs.js';
import { usersDocs } from './modules/auth/profile.docs.js';
import { membershipsDocs, workspacesDocs } from './modules/workspaces/workspaces.docs.js';
import { type OperationDocs, openApiOptions, type TagDoc } from './platform/openapi.js';

/** The tags of the document, in the order the docs UI shows them. */
const tags: TagDoc[] = [
  { name: 'auth', description: 'Accounts, session tokens and personal API keys.' },
  { name: 'users', description: 'The signed-in user and their workspaces.' },
  { name: 'workspaces', description: 'Workspaces: the unit of membership, plan and billing.' },
  { name: 'memberships', description: 'Who belongs to a workspace, with which role.' },
  { name: 'invitations', description: 'Invitations: the only way into a workspace or a team.' },
  { name: 'teams', description: 'Teams inside a workspace (they receive access to knowledge bases).' },
  { name: 'team memberships', description: 'Who belongs to a team, with which team role.' },
  { name: 'billing', description: 'Plans, credit, checkout, the billing portal and the payment provider webhook.' },
  { name: 'models', description: 'The AI models a workspace may use.' },
  { name: 'chats', description: 'Chats, sharing and public links.' },
  { name: 'messages', description: 'Messages and replies, streamed as server-sent events or as JSON.' },
  { name: 'documents', description: 'Documents: upload (signed URL), import from a URL, processing and chunks.' },
  { name: 'knowledge-bases', description: 'Knowledge bases: collections of documents a chat searches.' },
  { name: 'speech', description: 'Speech to text and translation.' },
  { name: 'files', description: 'Signed upload and download URLs served by the local file store.' },
];

/** Every route's docs, keyed `METHOD /url`: one entry per route (openapi.test.ts checks both ways). */
export function allOperationDocs(): OperationDocs {
  const docs = [
    authDocs,
    usersDocs,
    workspacesDocs,
    membershipsDocs,
    invitationsDocs,
    teamsDocs,
    teamMembershipsDocs,
    billingDocs,
    modelsDocs,
    chatsDocs,
    messagesDocs,
    documentsDocs,
    filesDocs,
    knowledgeBasesDocs,
    speechDocs,
  ];
  return Object.assign({}, ...docs);
}

/** The @fastify/swagger options of the app: every domain's operation docs. */
export function openApiDocument(serverUrl: string): FastifyDynamicSwaggerOptions {
  return openApiOptions({
    info: {
      title: 'Workspace AI service',
      description:
        'Workspaces, AI chat, knowledge bases and subscription billing. Errors are JSON `{detail, code}` ' +
        '(`Error`); lists are paginated with `?limit=&offset=` (`{count, next, previous, results}`).',
      version: '0.1.0',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    serverUrl,
    tags,
    docs: [allOperationDocs()],
  });
}
