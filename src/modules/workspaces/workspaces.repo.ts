import { and, asc, count, eq, ilike, inArray, or, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows } from '../../db/client.js';
import { requestWorkspaceRestriction } from '../../platform/request-context.js';
import { users } from '../users/users.table.js';
import type { WorkspaceRole } from './workspaces.schemas.js';
import { workspaceMemberships, workspaces } from './workspaces.table.js';

export type WorkspaceRow = typeof workspaces.$inferSelect;
export type MembershipRow = typeof workspaceMemberships.$inferSelect;
export type MembershipWithUser = MembershipRow & { user: { id: number; email: string; name: string } };

export async function countOwnedWorkspaces(db: DbOrTx, userId: number): Promise<number> {
  const [row] = await db.select({ n: count() }).from(workspaces).where(eq(workspaces.ownerId, userId));
  return row?.n ?? 0;
}

export async function findWorkspace(db: DbOrTx, id: string): Promise<WorkspaceRow | undefined> {
  const [row] = await db.select().from(workspaces).where(eq(workspaces.id, id));
  return row;
}

/**
 * The memberships of `userId` as the current request may see them: all of them, or only the one
 * in the workspace its API key is limited to (api-keys.policy.ts). Every list of "the caller's
 * workspaces" starts here.
 */
export function membershipsSeenBy(userId: number) {
  const only = requestWorkspaceRestriction();
  return and(eq(workspaceMemberships.userId, userId), only ? eq(workspaceMemberships.workspaceId, only) : undefined);
}

/** The workspace and the user's membership in it, in one query; undefined when not a member. */
export async function findWorkspaceWithMembership(db: DbOrTx, workspaceId: string, userId: number) {
  const [row] = await db
    .select({ workspace: workspaces, membership: workspaceMemberships })
    .from(workspaceMemberships)
    .innerJoin(workspaces, eq(workspaces.id, workspaceMemberships.workspaceId))
    .where(and(eq(workspaceMemberships.workspaceId, workspaceId), eq(workspaceMemberships.userId, userId)));
  return row;
}

export async function listWorkspacesOfUser(db: DbOrTx, userId: number, limit: number, offset: number) {
  const where = membershipsSeenBy(userId);
  const [rows, [total]] = await Promise.all([
    db
      .select({ workspace: workspaces, role: workspaceMemberships.role })
      .from(workspaceMemberships)
      .innerJoin(workspaces, eq(workspaces.id, workspaceMemberships.workspaceId))
      .where(where)
      .orderBy(asc(workspaces.createdAt), asc(workspaces.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(workspaceMemberships).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

/** Every workspace (operators), oldest first, with its owner's email; `search` matches name, slug or owner email. */
export async function listAllWorkspaces(db: DbOrTx, options: { limit: number; offset: number; search?: string }) {
  const pattern = options.search ? `%${options.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined;
  return db
    .select({ workspace: workspaces, ownerEmail: users.email })
    .from(workspaces)
    .leftJoin(users, eq(users.id, workspaces.ownerId))
    .where(pattern ? or(ilike(workspaces.name, pattern), ilike(workspaces.slug, pattern), ilike(users.email, pattern)) : undefined)
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id))
    .limit(options.limit)
    .offset(options.offset);
}

/** Every workspace of a user with their role, oldest first, without counting (for /api/users/me/). */
export async function listWorkspaceRolesOfUser(db: DbOrTx, userId: number, limit: number) {
  return db
    .select({ workspace: workspaces, role: workspaceMemberships.role })
    .from(workspaceMemberships)
    .innerJoin(workspaces, eq(workspaces.id, workspaceMemberships.workspaceId))
    .where(membershipsSeenBy(userId))
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id))
    .limit(limit);
}

/** Inserts unless the slug is taken; undefined means "try another slug". */
export async function insertWorkspace(db: DbOrTx, values: { name: string; slug: string; ownerId: number }) {
  const [row] = await db.insert(workspaces).values(values).onConflictDoNothing({ target: workspaces.slug }).returning();
  return row;
}

export async function updateWorkspace(
  db: DbOrTx,
  id: string,
  values: Partial<Pick<WorkspaceRow, 'name' | 'status' | 'ownerId'>>,
): Promise<WorkspaceRow> {
  const [row] = await db
    .update(workspaces)
    .set({ ...values, updatedAt: new Date() })
    .where(eq(workspaces.id, id))
    .returning();
  return row!;
}

export async function deleteWorkspace(db: DbOrTx, id: string): Promise<void> {
  await db.delete(workspaces).where(eq(workspaces.id, id));
}

// --- memberships ------------------------------------------------------------------------------

export async function insertMembership(db: DbOrTx, values: { workspaceId: string; userId: number; role: WorkspaceRole }) {
  const [row] = await db
    .insert(workspaceMemberships)
    .values(values)
    .onConflictDoNothing({ target: [workspaceMemberships.workspaceId, workspaceMemberships.userId] })
    .returning();
  return row;
}

export async function setMembershipRole(db: DbOrTx, workspaceId: string, userId: number, role: WorkspaceRole) {
  await db
    .update(workspaceMemberships)
    .set({ role, updatedAt: new Date() })
    .where(and(eq(workspaceMemberships.workspaceId, workspaceId), eq(workspaceMemberships.userId, userId)));
}

const membershipWithUser = {
  id: workspaceMemberships.id,
  workspaceId: workspaceMemberships.workspaceId,
  userId: workspaceMemberships.userId,
  role: workspaceMemberships.role,
  createdAt: workspaceMemberships.createdAt,
  updatedAt: workspaceMemberships.updatedAt,
  user: { id: users.id, email: users.email, name: users.name },
};

/** Memberships of every workspace `viewerId` belongs to (optionally one workspace). */
export async function listVisibleMemberships(
  db: DbOrTx,
  viewerId: number,
  options: { workspaceId?: string; limit: number; offset: number },
): Promise<{ rows: MembershipWithUser[]; count: number }> {
  const viewerWorkspaces = db
    .select({ id: workspaceMemberships.workspaceId })
    .from(workspaceMemberships)
    .where(membershipsSeenBy(viewerId));
  const where = and(
    inArray(workspaceMemberships.workspaceId, viewerWorkspaces),
    options.workspaceId ? eq(workspaceMemberships.workspaceId, options.workspaceId) : undefined,
  );
  const [rows, [total]] = await Promise.all([
    db
      .select(membershipWithUser)
      .from(workspaceMemberships)
      .innerJoin(users, eq(users.id, workspaceMemberships.userId))
      .where(where)
      .orderBy(asc(workspaceMemberships.createdAt), asc(workspaceMemberships.id))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ n: count() }).from(workspaceMemberships).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

export async function listMembershipsOfUser(db: DbOrTx, userId: number): Promise<MembershipWithUser[]> {
  return db
    .select(membershipWithUser)
    .from(workspaceMemberships)
    .innerJoin(users, eq(users.id, workspaceMemberships.userId))
    .where(membershipsSeenBy(userId))
    .orderBy(asc(workspaceMemberships.createdAt), asc(workspaceMemberships.id));
}

export async function findMembershipById(db: DbOrTx, id: string): Promise<MembershipWithUser | undefined> {
  const [row] = await db
    .select(membershipWithUser)
    .from(workspaceMemberships)
    .innerJoin(users, eq(users.id, workspaceMemberships.userId))
    .where(eq(workspaceMemberships.id, id));
  return row;
}

/**
 * What else a removed member loses, run in the removal's transaction before the membership goes:
 * the team memberships in the workspace's teams and the chat shares in it (owned by teams and
 * chats, wired in src/deps.ts). Everything else is checked against current membership.
 */
export type MemberAccessRemoval = (tx: DbOrTx, workspaceId: string, userId: number) => Promise<void>;

/** Takes a user out of a workspace (after `MemberAccessRemoval` has run in the same transaction). */
export async function removeMember(db: DbOrTx, workspaceId: string, userId: number): Promise<void> {
  await db
    .delete(workspaceMemberships)
    .where(and(eq(workspaceMemberships.workspaceId, workspaceId), eq(workspaceMemberships.userId, userId)));
}

/** Locks the workspace row for the rest of the transaction (ownership changes, removals). */
export async function lockWorkspace(db: DbOrTx, id: string): Promise<WorkspaceRow | undefined> {
  const rows = await queryRows<{ id: string }>(db, sql`SELECT id FROM workspaces WHERE id = ${id} FOR UPDATE`);
  if (!rows.length) return undefined;
  return findWorkspace(db, id);
}
