import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { chatSessions } from '../chats/chats.table.js';
import { documents } from '../documents/documents.table.js';
import { teams } from '../teams/teams.table.js';
import { users } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { uuidPrimaryKey } from '../../db/columns.js';

const ts = (name: string) => timestamp(name, { withTimezone: true });

export const knowledgeBases = pgTable(
  'knowledge_bases',
  {
    id: uuidPrimaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    isSharedWithWorkspace: boolean('is_shared_with_workspace').notNull().default(false),
    createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('knowledge_bases_workspace_idx').on(t.workspaceId)],
);

/** The link record between a knowledge base and a document. */
export const knowledgeBaseDocuments = pgTable(
  'knowledge_base_documents',
  {
    knowledgeBaseId: uuid('knowledge_base_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    documentId: uuid('document_id')
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    addedBy: integer('added_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.knowledgeBaseId, t.documentId] }), index('kb_documents_document_idx').on(t.documentId)],
);

export const knowledgeBaseTeamAccess = pgTable(
  'knowledge_base_team_access',
  {
    id: uuidPrimaryKey(),
    knowledgeBaseId: uuid('knowledge_base_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    teamId: uuid('team_id')
      .notNull()
      .references(() => teams.id, { onDelete: 'cascade' }),
    permission: text('permission', { enum: ['read', 'write'] }).notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    unique('kb_team_access_key').on(t.knowledgeBaseId, t.teamId),
    check('kb_team_access_permission_check', sql`${t.permission} in ('read', 'write')`),
  ],
);

/** Knowledge bases attached to a chat, searched by its agent. */
export const chatKnowledgeBases = pgTable(
  'chat_knowledge_bases',
  {
    sessionId: uuid('session_id')
      .notNull()
      .references(() => chatSessions.id, { onDelete: 'cascade' }),
    knowledgeBaseId: uuid('knowledge_base_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.knowledgeBaseId] }), index('chat_kbs_kb_idx').on(t.knowledgeBaseId)],
);
