import { and, count, desc, eq, exists, inArray, or } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { users } from '../users/users.table.js';
import { chatSessions, chatShares } from './chats.table.js';

export type ChatRow = typeof chatSessions.$inferSelect;
export type NewChat = typeof chatSessions.$inferInsert;

export async function insertChat(db: DbOrTx, values: NewChat): Promise<ChatRow> {
  const [row] = await db.insert(chatSessions).values(values).returning();
  return row!;
}

export async function findChat(db: DbOrTx, workspaceId: string, chatId: string): Promise<ChatRow | undefined> {
  const [row] = await db
    .select()
    .from(chatSessions)
    .where(and(eq(chatSessions.id, chatId), eq(chatSessions.workspaceId, workspaceId)));
  return row;
}

export async function findChatById(db: DbOrTx, chatId: string): Promise<ChatRow | undefined> {
  const [row] = await db.select().from(chatSessions).where(eq(chatSessions.id, chatId));
  return row;
}

export async function findChatByLink(db: DbOrTx, linkUuid: string): Promise<ChatRow | undefined> {
  const [row] = await db.select().from(chatSessions).where(eq(chatSessions.linkUuid, linkUuid));
  return row;
}

const sharedWith = (userId: number) =>
  and(eq(chatShares.sessionId, chatSessions.id), eq(chatShares.userId, userId));

/** Chats of a workspace the user owns, that are shared with them, or that are public; newest first. */
export async function listVisibleChats(db: DbOrTx, workspaceId: string, userId: number, limit: number, offset: number) {
  const where = and(
    eq(chatSessions.workspaceId, workspaceId),
    or(
      eq(chatSessions.ownerId, userId),
      eq(chatSessions.isPublic, true),
      exists(db.select({ one: chatShares.id }).from(chatShares).where(sharedWith(userId))),
    ),
  );
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(chatSessions)
      .where(where)
      .orderBy(desc(chatSessions.updatedAt), desc(chatSessions.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(chatSessions).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

export async function updateChat(db: DbOrTx, chatId: string, values: Partial<NewChat>): Promise<ChatRow> {
  const [row] = await db
    .update(chatSessions)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(chatSessions.id, chatId))
    .returning();
  return row!;
}

/** Marks the chat as active now (new messages bring it to the top of the list). */
export async function touchChat(db: DbOrTx, chatId: string): Promise<void> {
  await db.update(chatSessions).set({ updatedAt: new Date() }).where(eq(chatSessions.id, chatId));
}

export async function deleteChat(db: DbOrTx, chatId: string): Promise<void> {
  await db.delete(chatSessions).where(eq(chatSessions.id, chatId));
}

// --- shares -------------------------------------------------------------------------------------

export async function isSharedWith(db: DbOrTx, chatId: string, userId: number): Promise<boolean> {
  const [row] = await db
    .select({ id: chatShares.id })
    .from(chatShares)
    .where(and(eq(chatShares.sessionId, chatId), eq(chatShares.userId, userId)));
  return Boolean(row);
}

export async function insertShare(db: DbOrTx, chatId: string, userId: number, createdBy: number) {
  await db.insert(chatShares).values({ sessionId: chatId, userId, createdBy }).onConflictDoNothing();
  return findShare(db, chatId, userId);
}

export async function findShare(db: DbOrTx, chatId: string, userId: number) {
  const [row] = await db
    .select({ id: chatShares.id, createdAt: chatShares.createdAt, user: { id: users.id, email: users.email, name: users.name } })
    .from(chatShares)
    .innerJoin(users, eq(users.id, chatShares.userId))
    .where(and(eq(chatShares.sessionId, chatId), eq(chatShares.userId, userId)));
  return row;
}

export async function deleteShare(db: DbOrTx, chatId: string, userId: number): Promise<boolean> {
  const rows = await db
    .delete(chatShares)
    .where(and(eq(chatShares.sessionId, chatId), eq(chatShares.userId, userId)))
    .returning({ id: chatShares.id });
  return rows.length > 0;
}

export async function listShares(db: DbOrTx, chatId: string, limit: number, offset: number) {
  const where = eq(chatShares.sessionId, chatId);
  const [rows, [total]] = await Promise.all([
    db
      .select({ id: chatShares.id, createdAt: chatShares.createdAt, user: { id: users.id, email: users.email, name: users.name } })
      .from(chatShares)
      .innerJoin(users, eq(users.id, chatShares.userId))
      .where(where)
      .orderBy(chatShares.createdAt, chatShares.id)
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(chatShares).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

/**
 * Withdraws every chat share a user holds in a workspace (they left it or were removed): shares
 * would come back to life if the person were invited again later.
 */
export async function removeUserSharesInWorkspace(db: DbOrTx, workspaceId: string, userId: number): Promise<void> {
  const workspaceChats = db.select({ id: chatSessions.id }).from(chatSessions).where(eq(chatSessions.workspaceId, workspaceId));
  await db.delete(chatShares).where(and(eq(chatShares.userId, userId), inArray(chatShares.sessionId, workspaceChats)));
}
