import { sql } from 'drizzle-orm';
import { boolean, doublePrecision, index, integer, jsonb, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { users } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { uuidPrimaryKey } from '../../db/columns.js';

const ts = (name: string) => timestamp(name, { withTimezone: true });

export const chatSessions = pgTable(
  'chat_sessions',
  {
    id: uuidPrimaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    ownerId: integer('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull().default(''),
    aiModel: text('ai_model').notNull(),
    aiProvider: text('ai_provider').notNull(),
    systemPrompt: text('system_prompt').notNull().default(''),
    temperature: doublePrecision('temperature'),
    agentFramework: text('agent_framework').notNull().default('tools'),
    modelParameters: jsonb('model_parameters').$type<Record<string, unknown>>().notNull().default({}),
    isPublic: boolean('is_public').notNull().default(false),
    linkUuid: uuid('link_uuid').notNull().unique().defaultRandom(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('chat_sessions_workspace_idx').on(t.workspaceId, t.updatedAt),
    index('chat_sessions_owner_idx').on(t.ownerId),
    // The chat list (chats.repo.ts listVisibleChats): a member's own chats and the public ones,
    // newest first, and their count, from the index alone.
    index('chat_sessions_visible_owner_idx').on(t.workspaceId, t.ownerId, t.updatedAt, t.id),
    index('chat_sessions_visible_public_idx').on(t.workspaceId, t.updatedAt, t.id).where(sql`${t.isPublic}`),
  ],
);

/** A chat shared with one workspace member. */
export const chatShares = pgTable(
  'chat_shares',
  {
    id: uuidPrimaryKey(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => chatSessions.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [unique('chat_shares_session_user_key').on(t.sessionId, t.userId), index('chat_shares_user_idx').on(t.userId, t.sessionId)],
);
