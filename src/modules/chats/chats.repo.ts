import { and, count, desc, eq, inArray, ne, not, type Placeholder, sql } from 'drizzle-orm';
import { unionAll } from 'drizzle-orm/pg-core';
import type { DbOrTx } from '../../db/client.js';
import { users } from '../users/users.table.js';
import { chatSessions, chatShares } from './chats.table.js';

export type ChatRow = typeof chatSessions.$inferSelect;
export type NewChat = typeof chatSessions.$inferInsert;

export async function insertChat(db: DbOrTx, values: NewChat): Promise<ChatRow> {
  const [row] = await db.insert(chatSessions).values(values).returning();
  return row!;
}

/** The chat statements of every message request, prepared once per database (Drizzle builds their SQL once). */
function chatStatements(db: DbOrTx) {
  const chat = sql.placeholder('chatId');
  return {
    find: db
      .select()
      .from(chatSessions)
      .where(and(eq(chatSessions.id, chat), eq(chatSessions.workspaceId, sql.placeholder('workspaceId'))))
      .prepare('chats_find'),
    touch: db.update(chatSessions).set({ updatedAt: sql`${sql.placeholder('now')}::timestamptz` }).where(eq(chatSessions.id, chat)).prepare('chats_touch'),
  };
}
const chatPrepared = new WeakMap<DbOrTx, ReturnType<typeof chatStatements>>();
function statements(db: DbOrTx) {
  let found = chatPrepared.get(db);
  if (!found) chatPrepared.set(db, (found = chatStatements(db)));
  return found;
}

export async function findChat(db: DbOrTx, workspaceId: string, chatId: string): Promise<ChatRow | undefined> {
  const [row] = await statements(db).find.execute({ chatId, workspaceId });
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

/**
 * The chats of a workspace a user may see, as three disjoint index paths whose union is the
 * visibility rule: the ones they own (chat_sessions_visible_owner_idx), the public ones of others
 * (chat_sessions_visible_public_idx, partial) and the private ones of others shared with them
 * (chat_shares_user_idx, then each chat by its primary key). Disjoint, so the union needs no
 * de-duplication and the newest rows of all three merge from their indexes in order.
 * `upTo` bounds each path to its newest rows: the first `upTo` of the union are among them.
 */
function visiblePaths(db: DbOrTx, upTo?: Placeholder) {
  const ws = sql.placeholder('ws');
  const user = sql.placeholder('user');
  const columns = { id: chatSessions.id, updatedAt: chatSessions.updatedAt };
  const newest = [desc(chatSessions.updatedAt), desc(chatSessions.id)];
  const own = db.select(columns).from(chatSessions).where(and(eq(chatSessions.workspaceId, ws), eq(chatSessions.ownerId, user)));
  // A literal predicate (not a parameter), so the partial index applies to every plan.
  const open = db
    .select(columns)
    .from(chatSessions)
    .where(and(eq(chatSessions.workspaceId, ws), sql`${chatSessions.isPublic}`, ne(chatSessions.ownerId, user)));
  // One primary-key lookup per share: as a plain join the planner hashed the whole workspace's
  // chats to find the few shared ones (the LIMIT, one row per key anyway, keeps PostgreSQL from
  // flattening the lateral subquery into that join).
  const sharedChat = db
    .select(columns)
    .from(chatSessions)
    .where(and(eq(chatSessions.id, chatShares.sessionId), eq(chatSessions.workspaceId, ws), not(chatSessions.isPublic), ne(chatSessions.ownerId, user)))
    .limit(1)
    .as('shared_chat');
  const shared = db
    .select({ id: sharedChat.id, updatedAt: sharedChat.updatedAt })
    .from(chatShares)
    .crossJoinLateral(sharedChat)
    .where(eq(chatShares.userId, user));
  if (!upTo) return { own, open, shared };
  return {
    own: own.orderBy(...newest).limit(upTo),
    open: open.orderBy(...newest).limit(upTo),
    shared: shared.orderBy(desc(sharedChat.updatedAt), desc(sharedChat.id)).limit(upTo),
  };
}

/** The statements of the chat list, prepared once per database (Drizzle builds their SQL once). */
function listStatements(db: DbOrTx) {
  const all = visiblePaths(db);
  const visibleCount = sql<number>`((select count(*) from ${all.own.as('own_ids')}) + (select count(*) from ${all.open.as('open_ids')}) + (select count(*) from ${all.shared.as('shared_ids')}))`.mapWith(Number);
  const newest = visiblePaths(db, sql.placeholder('upTo'));
  const page = unionAll(newest.own, newest.open, newest.shared)
    .orderBy(sql`"updated_at" desc, "id" desc`)
    .limit(sql.placeholder('limit'))
    .offset(sql.placeholder('offset'))
    .as('visible');
  // Each of the page's chats by its primary key (a join hashed the workspace's chats; LIMIT as above).
  const chat = db.select().from(chatSessions).where(eq(chatSessions.id, page.id)).limit(1).as('chat');
  return {
    // The page and the total in one statement (the count an uncorrelated subquery, run once).
    page: db
      .select({ ...chat._.selectedFields, total: visibleCount })
      .from(page)
      .crossJoinLateral(chat)
      .orderBy(desc(page.updatedAt), desc(page.id))
      .prepare('chats_visible_page'),
    // Only for a page past the end, which has no row to carry the total.
    count: db.select({ total: visibleCount }).from(sql`(select 1) as one`).prepare('chats_visible_count'),
  };
}

const prepared = new WeakMap<DbOrTx, ReturnType<typeof listStatements>>();

/** Chats of a workspace the user owns, that are shared with them, or that are public; newest first. */
export async function listVisibleChats(db: DbOrTx, workspaceId: string, userId: number, limit: number, offset: number) {
  let statements = prepared.get(db);
  if (!statements) prepared.set(db, (statements = listStatements(db)));
  const params = { ws: workspaceId, user: userId };
  const found = await statements.page.execute({ ...params, upTo: limit + offset, limit, offset });
  const rows: ChatRow[] = found.map(({ total: _total, ...row }) => row);
  if (found.length > 0) return { rows, count: found[0]!.total };
  if (offset === 0) return { rows, count: 0 };
  const [total] = await statements.count.execute(params);
  return { rows, count: total?.total ?? 0 };
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
  await statements(db).touch.execute({ chatId, now: new Date().toISOString() });
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
