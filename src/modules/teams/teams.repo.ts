import { and, asc, count, eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import { users } from '../users/users.table.js';
import { membershipsSeenBy } from '../workspaces/index.js';
import { workspaceMemberships } from '../workspaces/workspaces.table.js';
import type { TeamRole } from './teams.schemas.js';
import { teamMemberships, teams } from './teams.table.js';

export type TeamRow = typeof teams.$inferSelect;
export type TeamMembershipRow = typeof teamMemberships.$inferSelect;
export type TeamMembershipWithUser = TeamMembershipRow & {
  workspaceId: string;
  user: { id: number; email: string; name: string };
};

/** Ids of the workspaces `userId` is a member of (as the current request may see them), as a subquery. */
function workspacesOf(db: DbOrTx, userId: number) {
  return db.select({ id: workspaceMemberships.workspaceId }).from(workspaceMemberships).where(membershipsSeenBy(userId));
}

export async function findTeam(db: DbOrTx, id: string): Promise<TeamRow | undefined> {
  const [row] = await db.select().from(teams).where(eq(teams.id, id));
  return row;
}

/** Teams of every workspace `viewerId` belongs to (optionally one workspace), oldest first. */
export async function listVisibleTeams(
  db: DbOrTx,
  viewerId: number,
  options: { workspaceId?: string; limit: number; offset: number },
): Promise<{ rows: TeamRow[]; count: number }> {
  const where = and(
    inArray(teams.workspaceId, workspacesOf(db, viewerId)),
    options.workspaceId ? eq(teams.workspaceId, options.workspaceId) : undefined,
  );
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(teams)
      .where(where)
      .orderBy(asc(teams.createdAt), asc(teams.id))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ n: count() }).from(teams).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

/** Inserts unless the workspace already has a team of that name; undefined means "name taken". */
export async function insertTeam(
  db: DbOrTx,
  values: { workspaceId: string; name: string; description: string; createdBy: number },
): Promise<TeamRow | undefined> {
  const [row] = await db
    .insert(teams)
    .values(values)
    .onConflictDoNothing({ target: [teams.workspaceId, teams.name] })
    .returning();
  return row;
}

/** Updates name and description; `'name_taken'` when another team of the workspace has the name. */
export async function updateTeam(
  db: DbOrTx,
  id: string,
  values: { name?: string; description?: string },
): Promise<TeamRow | 'name_taken'> {
  try {
    const [row] = await db
      .update(teams)
      .set({ ...values, updatedAt: new Date() })
      .where(eq(teams.id, id))
      .returning();
    return row!;
  } catch (error) {
    if (isUniqueViolation(error)) return 'name_taken';
    throw error;
  }
}

/** Deletes the team; its memberships and invitations go with it (foreign-key cascade). */
export async function deleteTeam(db: DbOrTx, id: string): Promise<void> {
  await db.delete(teams).where(eq(teams.id, id));
}

// --- team memberships -------------------------------------------------------------------------

/** Inserts unless the user is already in the team; undefined then. */
export async function insertTeamMembership(db: DbOrTx, values: { teamId: string; userId: number; role: TeamRole }) {
  const [row] = await db
    .insert(teamMemberships)
    .values(values)
    .onConflictDoNothing({ target: [teamMemberships.teamId, teamMemberships.userId] })
    .returning();
  return row;
}

export async function findTeamRole(db: DbOrTx, teamId: string, userId: number): Promise<TeamRole | null> {
  const [row] = await db
    .select({ role: teamMemberships.role })
    .from(teamMemberships)
    .where(and(eq(teamMemberships.teamId, teamId), eq(teamMemberships.userId, userId)));
  return row?.role ?? null;
}

export async function setTeamMembershipRole(db: DbOrTx, id: string, role: TeamRole): Promise<void> {
  await db.update(teamMemberships).set({ role, updatedAt: new Date() }).where(eq(teamMemberships.id, id));
}

export async function deleteTeamMembership(db: DbOrTx, id: string): Promise<void> {
  await db.delete(teamMemberships).where(eq(teamMemberships.id, id));
}

const teamMembershipWithUser = {
  id: teamMemberships.id,
  teamId: teamMemberships.teamId,
  userId: teamMemberships.userId,
  role: teamMemberships.role,
  createdAt: teamMemberships.createdAt,
  updatedAt: teamMemberships.updatedAt,
  workspaceId: teams.workspaceId,
  user: { id: users.id, email: users.email, name: users.name },
};

function selectTeamMemberships(db: DbOrTx) {
  return db
    .select(teamMembershipWithUser)
    .from(teamMemberships)
    .innerJoin(teams, eq(teams.id, teamMemberships.teamId))
    .innerJoin(users, eq(users.id, teamMemberships.userId));
}

export async function findTeamMembershipById(db: DbOrTx, id: string): Promise<TeamMembershipWithUser | undefined> {
  const [row] = await selectTeamMemberships(db).where(eq(teamMemberships.id, id));
  return row;
}

/** Memberships of the teams in every workspace `viewerId` belongs to, optionally narrowed. */
export async function listVisibleTeamMemberships(
  db: DbOrTx,
  viewerId: number,
  options: { teamId?: string; workspaceId?: string; limit: number; offset: number },
): Promise<{ rows: TeamMembershipWithUser[]; count: number }> {
  const where = and(
    inArray(teams.workspaceId, workspacesOf(db, viewerId)),
    options.teamId ? eq(teamMemberships.teamId, options.teamId) : undefined,
    options.workspaceId ? eq(teams.workspaceId, options.workspaceId) : undefined,
  );
  const [rows, [total]] = await Promise.all([
    selectTeamMemberships(db)
      .where(where)
      .orderBy(asc(teamMemberships.createdAt), asc(teamMemberships.id))
      .limit(options.limit)
      .offset(options.offset),
    db
      .select({ n: count() })
      .from(teamMemberships)
      .innerJoin(teams, eq(teams.id, teamMemberships.teamId))
      .where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

export async function listTeamMembershipsOfUser(db: DbOrTx, userId: number): Promise<TeamMembershipWithUser[]> {
  return selectTeamMemberships(db)
    .where(and(eq(teamMemberships.userId, userId), inArray(teams.workspaceId, workspacesOf(db, userId))))
    .orderBy(asc(teamMemberships.createdAt), asc(teamMemberships.id));
}

/** Ends a user's memberships in every team of a workspace (they left it or were removed). */
export async function removeUserFromWorkspaceTeams(db: DbOrTx, workspaceId: string, userId: number): Promise<void> {
  const workspaceTeams = db.select({ id: teams.id }).from(teams).where(eq(teams.workspaceId, workspaceId));
  await db.delete(teamMemberships).where(and(eq(teamMemberships.userId, userId), inArray(teamMemberships.teamId, workspaceTeams)));
}
