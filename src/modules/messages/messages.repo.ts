import { and, asc, count, desc, eq, inArray, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { agentTasks, messages } from './messages.table.js';

export type MessageRow = typeof messages.$inferSelect;
export type NewMessage = typeof messages.$inferInsert;
export type AgentTaskRow = typeof agentTasks.$inferSelect;

/** Every message of a chat, oldest first (the whole tree, all branches). */
export async function listMessagesOfChat(db: DbOrTx, chatId: string): Promise<MessageRow[]> {
  return db.select().from(messages).where(eq(messages.sessionId, chatId)).orderBy(asc(messages.createdAt), asc(messages.id));
}

export async function listMessagesPage(db: DbOrTx, chatId: string, limit: number, offset: number) {
  const where = eq(messages.sessionId, chatId);
  const [rows, [total]] = await Promise.all([
    db.select().from(messages).where(where).orderBy(asc(messages.createdAt), asc(messages.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(messages).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

export async function findMessage(db: DbOrTx, chatId: string, messageId: string): Promise<MessageRow | undefined> {
  const [row] = await db
    .select()
    .from(messages)
    .where(and(eq(messages.sessionId, chatId), eq(messages.id, messageId)));
  return row;
}

/** The newest saved reply of a stream (a stream id may be reused: the latest use). */
export async function findReplyOfStream(db: DbOrTx, chatId: string, streamId: string): Promise<MessageRow | undefined> {
  const [row] = await db
    .select()
    .from(messages)
    .where(and(eq(messages.sessionId, chatId), eq(messages.streamId, streamId), eq(messages.role, 'assistant')))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(1);
  return row;
}

/** The newest reply of the chat, under which a new user message hangs. */
/** The branch from the first message down to `messageId`, in conversation order (one statement). */
export async function findPath(db: DbOrTx, messageId: string): Promise<MessageRow[]> {
  const rows = await db
    .select()
    .from(messages)
    .where(
      sql`${messages.id} IN (
        WITH RECURSIVE path(id, parent_id, depth) AS (
          SELECT id, parent_id, 0 FROM messages WHERE id = ${messageId}
          UNION ALL
          SELECT m.id, m.parent_id, p.depth + 1 FROM messages m JOIN path p ON m.id = p.parent_id
          WHERE p.depth < 10000
        )
        SELECT id FROM path)`,
    );
  // Walked from the leaf up its parents, then reversed: the order is the tree's, not the clock's.
  const byId = new Map(rows.map((row) => [row.id, row]));
  const path: MessageRow[] = [];
  for (let row = byId.get(messageId); row; row = row.parentId ? byId.get(row.parentId) : undefined) path.push(row);
  return path.reverse();
}

/**
 * Inserts a user message under the chat's newest reply (the parent is found in the same
 * statement).
 */
export async function insertUnderNewestReply(db: DbOrTx, values: Omit<NewMessage, 'parentId'>): Promise<MessageRow> {
  const newestReply = sql`(SELECT id FROM ${messages} WHERE ${messages.sessionId} = ${values.sessionId} AND ${messages.role} = 'assistant'
    ORDER BY ${messages.createdAt} DESC, ${messages.id} DESC LIMIT 1)`;
  const [row] = await db
    .insert(messages)
    .values({ ...values, parentId: newestReply })
    .returning();
  return row!;
}

export async function insertMessage(db: DbOrTx, values: NewMessage): Promise<MessageRow> {
  const [row] = await db.insert(messages).values(values).returning();
  return row!;
}

/** Inserts a message whose id is fixed in advance; a second insert of that id returns the first. */
export async function insertMessageOnce(db: DbOrTx, values: NewMessage & { id: string }): Promise<MessageRow> {
  const [row] = await db.insert(messages).values(values).onConflictDoNothing({ target: messages.id }).returning();
  if (row) return row;
  const [existing] = await db.select().from(messages).where(eq(messages.id, values.id));
  return existing!;
}

export async function updateMessage(db: DbOrTx, messageId: string, values: Partial<NewMessage>): Promise<MessageRow> {
  const [row] = await db
    .update(messages)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(messages.id, messageId))
    .returning();
  return row!;
}

/** Deletes the message; its replies (the subtree) go with it through the parent foreign key. */
export async function deleteMessage(db: DbOrTx, messageId: string): Promise<void> {
  await db.delete(messages).where(eq(messages.id, messageId));
}

// --- agent tasks --------------------------------------------------------------------------------

export async function insertAgentTask(db: DbOrTx, values: typeof agentTasks.$inferInsert): Promise<AgentTaskRow> {
  const [row] = await db.insert(agentTasks).values(values).returning();
  return row!;
}

export async function findAgentTask(db: DbOrTx, taskId: string): Promise<AgentTaskRow | undefined> {
  const [row] = await db.select().from(agentTasks).where(eq(agentTasks.id, taskId));
  return row;
}

export async function updateAgentTask(db: DbOrTx, taskId: string, values: Partial<typeof agentTasks.$inferInsert>) {
  await db
    .update(agentTasks)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(agentTasks.id, taskId));
}

/** A FAILURE agent task back to PENDING (an operator's re-drive). */
export async function reopenFailedAgentTask(db: DbOrTx, taskId: string) {
  await db
    .update(agentTasks)
    .set({ status: 'PENDING', error: null, updatedAt: new Date() })
    .where(and(eq(agentTasks.id, taskId), eq(agentTasks.status, 'FAILURE')));
}

/** Updates an agent task that has not finished; nothing happens to a finished one. */
export async function updateOpenAgentTask(db: DbOrTx, taskId: string, values: Partial<typeof agentTasks.$inferInsert>) {
  await db
    .update(agentTasks)
    .set({ ...values, updatedAt: new Date() })
    .where(and(eq(agentTasks.id, taskId), inArray(agentTasks.status, ['PENDING', 'STARTED'])));
}
