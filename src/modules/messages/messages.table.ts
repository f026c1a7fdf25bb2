import { sql } from 'drizzle-orm';
import { type AnyPgColumn, boolean, check, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { chatSessions } from '../chats/chats.table.js';
import { users } from '../users/users.table.js';
import type { MessageSource } from '../agents/index.js';
import { uuidPrimaryKey } from '../../db/columns.js';

// The messages module owns the message tree and the agent tasks; chats owns the sessions they hang under.

const ts = (name: string) => timestamp(name, { withTimezone: true });

export interface MessageAttachment {
  id: string;
  name: string;
  content_type: string;
  size: number;
  storage_key: string;
}

/** A knowledge passage a reply cites: the agents produce them, the message keeps them. */
export type { MessageSource } from '../agents/index.js';

export interface MessageUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/**
 * Messages form a tree: a user message hangs under the reply it answers (null for the first),
 * replies hang under their user message; siblings are branches. Deleting a message deletes
 * everything below it.
 */
export const messages = pgTable(
  'messages',
  {
    id: uuidPrimaryKey(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => chatSessions.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ['user', 'assistant'] }).notNull(),
    content: text('content').notNull().default(''),
    authorId: integer('author_id').references(() => users.id, { onDelete: 'set null' }),
    parentId: uuid('parent_id').references((): AnyPgColumn => messages.id, { onDelete: 'cascade' }),
    attachments: jsonb('attachments').$type<MessageAttachment[]>().notNull().default([]),
    rating: text('rating', { enum: ['up', 'down'] }),
    reason: text('reason').notNull().default(''),
    stopped: boolean('stopped').notNull().default(false),
    usage: jsonb('usage').$type<MessageUsage>(),
    aiModel: text('ai_model'),
    sources: jsonb('sources').$type<MessageSource[]>().notNull().default([]),
    /** A reply's stream (the client's `stream_id` or the generated one): reattaching finds it by this. */
    streamId: text('stream_id'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('messages_session_idx').on(t.sessionId, t.createdAt),
    index('messages_parent_idx').on(t.parentId),
    index('messages_stream_idx').on(t.sessionId, t.streamId),
    check('messages_role_check', sql`${t.role} in ('user', 'assistant')`),
    check('messages_rating_check', sql`${t.rating} is null or ${t.rating} in ('up', 'down')`),
  ],
);

export const agentTaskStatuses = ['PENDING', 'STARTED', 'SUCCESS', 'FAILURE'] as const;

/** Background agent work started by a non-streamed send when AGENT_ASYNC_ENABLED. */
export const agentTasks = pgTable(
  'agent_tasks',
  {
    id: uuidPrimaryKey(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => chatSessions.id, { onDelete: 'cascade' }),
    userMessageId: uuid('user_message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    requestedBy: integer('requested_by').references(() => users.id, { onDelete: 'set null' }),
    status: text('status', { enum: agentTaskStatuses }).notNull().default('PENDING'),
    messageId: uuid('message_id').references(() => messages.id, { onDelete: 'set null' }),
    /** The id the reply gets: fixed when the task is created, so a re-run never saves a second reply. */
    replyId: uuid('reply_id').notNull().defaultRandom(),
    error: text('error'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('agent_tasks_session_idx').on(t.sessionId)],
);
