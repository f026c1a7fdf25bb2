import { and, desc, count, eq, gt, isNull, lte, or, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { teams } from '../teams/teams.table.js';
import { users } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { invitations } from './invitations.table.js';
import type { InvitationRole, InvitationStatus } from './invitations.schemas.js';

export type InvitationRow = typeof invitations.$inferSelect;
/** An invitation with the names its response shows. */
export type InvitationView = InvitationRow & {
  workspaceName: string;
  teamName: string | null;
  inviterEmail: string | null;
  inviterName: string | null;
};

/** The row is pending and its time has not run out. */
const isLive = and(eq(invitations.status, 'pending'), gt(invitations.expiresAt, sql`now()`));
/** Pending on paper but past its expiry. */
const isStale = and(eq(invitations.status, 'pending'), lte(invitations.expiresAt, sql`now()`));

/** The condition for a `?status=` filter, as clients see statuses (see `effectiveStatus`). */
function statusIs(status: InvitationStatus): SQL | undefined {
  if (status === 'pending') return isLive;
  if (status === 'expired') return or(eq(invitations.status, 'expired'), isStale);
  return eq(invitations.status, status);
}

function selectViews(db: DbOrTx) {
  return db
    .select({
      id: invitations.id,
      workspaceId: invitations.workspaceId,
      teamId: invitations.teamId,
      email: invitations.email,
      role: invitations.role,
      status: invitations.status,
      invitedBy: invitations.invitedBy,
      tokenHash: invitations.tokenHash,
      expiresAt: invitations.expiresAt,
      respondedAt: invitations.respondedAt,
      createdAt: invitations.createdAt,
      updatedAt: invitations.updatedAt,
      workspaceName: workspaces.name,
      teamName: teams.name,
      inviterEmail: users.email,
      inviterName: users.name,
    })
    .from(invitations)
    .innerJoin(workspaces, eq(workspaces.id, invitations.workspaceId))
    .leftJoin(teams, eq(teams.id, invitations.teamId))
    .leftJoin(users, eq(users.id, invitations.invitedBy));
}

async function page(db: DbOrTx, where: SQL | undefined, limit: number, offset: number) {
  const [rows, [total]] = await Promise.all([
    selectViews(db)
      .where(where)
      .orderBy(desc(invitations.createdAt), desc(invitations.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(invitations).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

export async function findInvitation(db: DbOrTx, id: string): Promise<InvitationView | undefined> {
  const [row] = await selectViews(db).where(eq(invitations.id, id));
  return row;
}

/** Invitations of one workspace (`teamId` null) or one team, newest first. */
export function listInvitations(
  db: DbOrTx,
  target: { workspaceId: string; teamId: string | null },
  options: { status?: InvitationStatus; limit: number; offset: number },
) {
  const where = and(
    eq(invitations.workspaceId, target.workspaceId),
    target.teamId ? eq(invitations.teamId, target.teamId) : isNull(invitations.teamId),
    options.status ? statusIs(options.status) : undefined,
  );
  return page(db, where, options.limit, options.offset);
}

/** The live (pending, unexpired) invitation whose mailed secret has this hash, if any. */
export async function findLiveInvitationByTokenHash(db: DbOrTx, tokenHash: string): Promise<InvitationRow | undefined> {
  const [row] = await db
    .select()
    .from(invitations)
    .where(and(eq(invitations.tokenHash, tokenHash), isLive));
  return row;
}

/** The pending, unexpired invitations addressed to `email`, newest first. */
export function listLiveInvitationsFor(db: DbOrTx, email: string, limit: number, offset: number) {
  return page(db, and(eq(invitations.email, email), isLive), limit, offset);
}

/**
 * Marks the stale pending invitations of one target and email `expired`, so that they no longer
 * hold the "one pending invitation" index against a new one.
 */
export async function expireStale(db: DbOrTx, target: { workspaceId: string; teamId: string | null; email: string }) {
  await db
    .update(invitations)
    .set({ status: 'expired', updatedAt: new Date() })
    .where(
      and(
        eq(invitations.workspaceId, target.workspaceId),
        target.teamId ? eq(invitations.teamId, target.teamId) : isNull(invitations.teamId),
        eq(invitations.email, target.email),
        isStale,
      ),
    );
}

/** Marks one invitation `expired` if it is pending and past its expiry. */
export async function expireIfStale(db: DbOrTx, id: string): Promise<void> {
  await db
    .update(invitations)
    .set({ status: 'expired', updatedAt: new Date() })
    .where(and(eq(invitations.id, id), isStale));
}

/** Inserts a pending invitation; undefined when one is already pending for the same target and email. */
export async function insertInvitation(
  db: DbOrTx,
  values: {
    workspaceId: string;
    teamId: string | null;
    email: string;
    role: InvitationRole;
    invitedBy: number;
    expiresAt: Date;
    /** SHA-256 of the secret mailed with the invitation. */
    tokenHash: string;
  },
): Promise<InvitationRow | undefined> {
  // No conflict target: the only unique index a new row can hit is the partial "one pending" one.
  const [row] = await db.insert(invitations).values(values).onConflictDoNothing().returning();
  return row;
}

/**
 * Moves a live (pending, unexpired) invitation to `status`; undefined when it is not live any more.
 * The condition in the UPDATE is what makes accepting single-use under concurrency: a second
 * transaction waits for the first's row lock, then finds the status changed and updates nothing.
 */
export async function resolveLive(
  db: DbOrTx,
  id: string,
  status: Extract<InvitationStatus, 'accepted' | 'declined' | 'revoked'>,
): Promise<InvitationRow | undefined> {
  const now = new Date();
  const [row] = await db
    .update(invitations)
    .set({ status, respondedAt: status === 'revoked' ? null : now, updatedAt: now })
    .where(and(eq(invitations.id, id), isLive))
    .returning();
  return row;
}
