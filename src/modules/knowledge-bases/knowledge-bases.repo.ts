import { and, count, desc, eq, exists, inArray, or, type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, preparedStatement } from '../../db/client.js';
import { documents } from '../documents/documents.table.js';
import { teamMemberships, teams } from '../teams/teams.table.js';
import {
  chatKnowledgeBases,
  knowledgeBaseDocuments,
  knowledgeBases,
  knowledgeBaseTeamAccess,
} from './knowledge-bases.table.js';

export type KbRow = typeof knowledgeBases.$inferSelect;

/** Team rules on knowledge bases that reach `userId` through their team memberships. */
function userTeamRule(userId: number, permissions: Array<'read' | 'write'> = ['read', 'write']) {
  return exists(
    sql`(SELECT 1 FROM ${knowledgeBaseTeamAccess}
         JOIN ${teamMemberships} ON ${teamMemberships.teamId} = ${knowledgeBaseTeamAccess.teamId}
         WHERE ${knowledgeBaseTeamAccess.knowledgeBaseId} = ${knowledgeBases.id}
           AND ${teamMemberships.userId} = ${userId}
           AND ${inArray(knowledgeBaseTeamAccess.permission, permissions)})`,
  );
}

/** SQL condition: the knowledge base (joined as `knowledge_bases`) is readable by the viewer. */
export function readableKb(viewer: { userId: number; isOwnerOrAdmin: boolean }): SQL {
  if (viewer.isOwnerOrAdmin) return sql`true`;
  return or(
    eq(knowledgeBases.createdBy, viewer.userId),
    eq(knowledgeBases.isSharedWithWorkspace, true),
    userTeamRule(viewer.userId),
  )!;
}

/** SQL condition: the document (joined as `documents`) is attached to a knowledge base the viewer reads. */
export function documentInReadableKb(viewer: { userId: number; isOwnerOrAdmin: boolean }): SQL {
  return exists(
    sql`(SELECT 1 FROM ${knowledgeBaseDocuments} JOIN ${knowledgeBases} ON ${knowledgeBases.id} = ${knowledgeBaseDocuments.knowledgeBaseId}
         WHERE ${knowledgeBaseDocuments.documentId} = ${documents.id} AND ${readableKb(viewer)})`,
  );
}

export async function insertKb(db: DbOrTx, values: typeof knowledgeBases.$inferInsert): Promise<KbRow> {
  const [row] = await db.insert(knowledgeBases).values(values).returning();
  return row!;
}

export async function findKb(db: DbOrTx, workspaceId: string, kbId: string): Promise<KbRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.id, kbId), eq(knowledgeBases.workspaceId, workspaceId)));
  return row;
}

/** The strongest team rule the user holds on a knowledge base. */
export async function teamPermission(db: DbOrTx, kbId: string, userId: number): Promise<'read' | 'write' | null> {
  const rows = await db
    .select({ permission: knowledgeBaseTeamAccess.permission })
    .from(knowledgeBaseTeamAccess)
    .innerJoin(teamMemberships, eq(teamMemberships.teamId, knowledgeBaseTeamAccess.teamId))
    .where(and(eq(knowledgeBaseTeamAccess.knowledgeBaseId, kbId), eq(teamMemberships.userId, userId)));
  if (rows.some((r) => r.permission === 'write')) return 'write';
  return rows.length ? 'read' : null;
}

export async function listReadableKbs(
  db: DbOrTx,
  workspaceId: string,
  viewer: { userId: number; isOwnerOrAdmin: boolean },
  limit: number,
  offset: number,
) {
  const where = and(eq(knowledgeBases.workspaceId, workspaceId), readableKb(viewer));
  const [rows, [total]] = await Promise.all([
    db.select().from(knowledgeBases).where(where).orderBy(desc(knowledgeBases.createdAt), desc(knowledgeBases.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(knowledgeBases).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

/** The readable knowledge bases among `ids` (in the workspace). */
export async function findReadableKbs(db: DbOrTx, workspaceId: string, ids: string[], viewer: { userId: number; isOwnerOrAdmin: boolean }) {
  if (!ids.length) return [];
  return db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.workspaceId, workspaceId), inArray(knowledgeBases.id, ids), readableKb(viewer)));
}

/** The knowledge bases among `ids` the viewer may write to. */
export async function findWritableKbs(db: DbOrTx, workspaceId: string, ids: string[], viewer: { userId: number; isOwnerOrAdmin: boolean }) {
  if (!ids.length) return [];
  const writable = viewer.isOwnerOrAdmin
    ? sql`true`
    : or(eq(knowledgeBases.createdBy, viewer.userId), userTeamRule(viewer.userId, ['write']));
  return db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.workspaceId, workspaceId), inArray(knowledgeBases.id, ids), writable));
}

export async function updateKb(db: DbOrTx, kbId: string, values: Partial<typeof knowledgeBases.$inferInsert>): Promise<KbRow> {
  const [row] = await db
    .update(knowledgeBases)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(knowledgeBases.id, kbId))
    .returning();
  return row!;
}

export async function deleteKb(db: DbOrTx, kbId: string): Promise<void> {
  await db.delete(knowledgeBases).where(eq(knowledgeBases.id, kbId));
}

// --- documents in knowledge bases --------------------------------------------------------------

export async function addDocuments(db: DbOrTx, kbId: string, documentIds: string[], addedBy: number): Promise<void> {
  if (!documentIds.length) return;
  await db
    .insert(knowledgeBaseDocuments)
    .values(documentIds.map((documentId) => ({ knowledgeBaseId: kbId, documentId, addedBy })))
    .onConflictDoNothing();
}

export async function removeDocuments(db: DbOrTx, kbId: string, documentIds: string[]): Promise<void> {
  if (!documentIds.length) return;
  await db
    .delete(knowledgeBaseDocuments)
    .where(and(eq(knowledgeBaseDocuments.knowledgeBaseId, kbId), inArray(knowledgeBaseDocuments.documentId, documentIds)));
}

export async function listKbDocuments(db: DbOrTx, kbId: string, limit: number, offset: number) {
  const where = eq(knowledgeBaseDocuments.knowledgeBaseId, kbId);
  const [rows, [total]] = await Promise.all([
    db
      .select({ document: documents })
      .from(knowledgeBaseDocuments)
      .innerJoin(documents, eq(documents.id, knowledgeBaseDocuments.documentId))
      .where(where)
      .orderBy(desc(knowledgeBaseDocuments.createdAt), desc(documents.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(knowledgeBaseDocuments).where(where),
  ]);
  return { rows: rows.map((r) => r.document), count: total?.n ?? 0 };
}

/** Knowledge base ids of each document. */
export async function kbIdsOfDocuments(db: DbOrTx, documentIds: string[]): Promise<Map<string, string[]>> {
  const result = new Map<string, string[]>(documentIds.map((id) => [id, []]));
  if (!documentIds.length) return result;
  const rows = await db
    .select({ documentId: knowledgeBaseDocuments.documentId, kbId: knowledgeBaseDocuments.knowledgeBaseId })
    .from(knowledgeBaseDocuments)
    .where(inArray(knowledgeBaseDocuments.documentId, documentIds))
    .orderBy(knowledgeBaseDocuments.createdAt);
  for (const row of rows) result.get(row.documentId)?.push(row.kbId);
  return result;
}

// --- team access ---------------------------------------------------------------------------------

export async function listTeamAccess(db: DbOrTx, kbId: string) {
  return db
    .select({ id: knowledgeBaseTeamAccess.id, teamId: knowledgeBaseTeamAccess.teamId, teamName: teams.name, permission: knowledgeBaseTeamAccess.permission, createdAt: knowledgeBaseTeamAccess.createdAt })
    .from(knowledgeBaseTeamAccess)
    .innerJoin(teams, eq(teams.id, knowledgeBaseTeamAccess.teamId))
    .where(eq(knowledgeBaseTeamAccess.knowledgeBaseId, kbId))
    .orderBy(knowledgeBaseTeamAccess.createdAt);
}

export async function upsertTeamAccess(db: DbOrTx, kbId: string, teamId: string, permission: 'read' | 'write') {
  await db
    .insert(knowledgeBaseTeamAccess)
    .values({ knowledgeBaseId: kbId, teamId, permission })
    .onConflictDoUpdate({ target: [knowledgeBaseTeamAccess.knowledgeBaseId, knowledgeBaseTeamAccess.teamId], set: { permission } });
}

export async function deleteTeamAccess(db: DbOrTx, kbId: string, teamId: string): Promise<boolean> {
  const rows = await db
    .delete(knowledgeBaseTeamAccess)
    .where(and(eq(knowledgeBaseTeamAccess.knowledgeBaseId, kbId), eq(knowledgeBaseTeamAccess.teamId, teamId)))
    .returning({ id: knowledgeBaseTeamAccess.id });
  return rows.length > 0;
}

// --- chats ---------------------------------------------------------------------------------------

export async function listChatKbs(db: DbOrTx, chatId: string): Promise<KbRow[]> {
  const rows = await db
    .select({ kb: knowledgeBases })
    .from(chatKnowledgeBases)
    .innerJoin(knowledgeBases, eq(knowledgeBases.id, chatKnowledgeBases.knowledgeBaseId))
    .where(eq(chatKnowledgeBases.sessionId, chatId))
    .orderBy(chatKnowledgeBases.createdAt);
  return rows.map((r) => r.kb);
}

export async function attachToChat(db: DbOrTx, chatId: string, kbIds: string[]): Promise<void> {
  if (!kbIds.length) return;
  await db
    .insert(chatKnowledgeBases)
    .values(kbIds.map((knowledgeBaseId) => ({ sessionId: chatId, knowledgeBaseId })))
    .onConflictDoNothing();
}

export async function detachFromChat(db: DbOrTx, chatId: string, kbIds: string[]): Promise<void> {
  if (!kbIds.length) return;
  await db
    .delete(chatKnowledgeBases)
    .where(and(eq(chatKnowledgeBases.sessionId, chatId), inArray(chatKnowledgeBases.knowledgeBaseId, kbIds)));
}

/** Read on every turn (a streamed send's phase one): built once, a named statement on PostgreSQL. */
const chatHasKnowledgeStatement = preparedStatement<{ found: boolean }>(
  (p) => sql`SELECT EXISTS (SELECT 1 FROM ${chatKnowledgeBases} WHERE ${chatKnowledgeBases.sessionId} = ${p('chatId')}::uuid) AS found`,
);

export async function chatHasKnowledge(db: DbOrTx, chatId: string): Promise<boolean> {
  const [row] = await chatHasKnowledgeStatement(db, { chatId });
  return row?.found === true;
}
