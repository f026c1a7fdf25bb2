import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import type { Db } from '../../db/client.js';
import type { AuthUser } from '../../platform/auth.js';
import type { AppError } from '../../platform/errors.js';
import { isUuid } from '../../platform/ids.js';
import type { Mailer } from '../../platform/mail/port.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { randomToken, sha256Hex } from '../../platform/secrets.js';
import { requireTeamAccess } from '../teams/index.js';
import { teamErrors } from '../teams/index.js';
import { canManageTeam } from '../teams/index.js';
import { findTeamRole, insertTeamMembership } from '../teams/index.js';
import { findUserByEmail, findUserById, markEmailVerified, normalizeEmail } from '../users/index.js';
import { assertWritable, requireMember } from '../workspaces/index.js';
import { workspaceErrors } from '../workspaces/index.js';
import { isOwnerOrAdmin } from '../workspaces/index.js';
import { findWorkspaceWithMembership, insertMembership, lockWorkspace } from '../workspaces/index.js';
import { invitationErrors } from './invitations.errors.js';
import { invitationMail } from './invitations.mail.js';
import { answerDecision, effectiveStatus } from './invitations.policy.js';
import * as repo from './invitations.repo.js';
import type { CreateInvitationInput, InvitationOut, InvitationStatus } from './invitations.schemas.js';

export interface InvitationsServiceDeps {
  db: Db;
  config: Pick<Config, 'INVITATION_TTL_SECONDS' | 'publicBaseUrl'>;
  mailer: Mailer;
  log: Logger;
}

type ListQuery = PageQuery & { status?: InvitationStatus };

export function toInvitationOut(row: repo.InvitationView, now = new Date()): InvitationOut {
  return {
    id: row.id,
    workspace: row.workspaceId,
    team: row.teamId,
    email: row.email,
    role: row.role,
    status: effectiveStatus(row, now),
    expires_at: row.expiresAt.toISOString(),
    created_at: row.createdAt.toISOString(),
    workspace_name: row.workspaceName,
    team_name: row.teamName,
    invited_by:
      row.invitedBy !== null && row.inviterEmail !== null
        ? { id: row.invitedBy, email: row.inviterEmail, name: row.inviterName ?? '' }
        : null,
  };
}

function toPageResult(page: { rows: repo.InvitationView[]; count: number }): PageResult<InvitationOut> {
  const now = new Date();
  return { count: page.count, results: page.rows.map((row) => toInvitationOut(row, now)) };
}

export function createInvitationsService({ db, config, mailer, log }: InvitationsServiceDeps) {
  /** Records the invitation (one pending per target and email), then mails it once committed. */
  async function invite(
    caller: AuthUser,
    target: { workspaceId: string; workspaceName: string; teamId: string | null; teamName: string | null },
    input: CreateInvitationInput,
  ): Promise<InvitationOut> {
    const email = normalizeEmail(input.email);
    // Only the mail carries the secret (the inviter never sees it): it proves the invitee's mailbox.
    const token = randomToken();
    const row = await db.transaction(async (tx) => {
      await repo.expireStale(tx, { workspaceId: target.workspaceId, teamId: target.teamId, email });
      return repo.insertInvitation(tx, {
        workspaceId: target.workspaceId,
        teamId: target.teamId,
        email,
        role: input.role,
        invitedBy: caller.id,
        expiresAt: new Date(Date.now() + config.INVITATION_TTL_SECONDS * 1000),
        tokenHash: sha256Hex(token),
      });
    });
    // The partial unique index decides concurrent invitations of the same person.
    if (!row) throw invitationErrors.alreadyPending();
    const view: repo.InvitationView = {
      ...row,
      workspaceName: target.workspaceName,
      teamName: target.teamName,
      inviterEmail: caller.email,
      inviterName: caller.name,
    };
    try {
      await mailer.send(
        invitationMail({
          invitationId: row.id,
          token,
          email,
          role: row.role,
          workspaceName: target.workspaceName,
          teamName: target.teamName,
          inviter: caller,
          expiresAt: row.expiresAt,
          publicBaseUrl: config.publicBaseUrl,
        }),
      );
    } catch (error) {
      // The invitation stands (the invitee also sees it in GET /api/invitations/); the outbox keeps the failure.
      log.error({ err: error, invitationId: row.id }, 'invitation mail could not be sent');
    }
    return toInvitationOut(view);
  }

  /** An invitation of exactly this workspace (team null) or team; anything else is 404. */
  async function loadScoped(invitationId: string, target: { workspaceId: string; teamId: string | null }) {
    const row = isUuid(invitationId) ? await repo.findInvitation(db, invitationId) : undefined;
    if (!row || row.workspaceId !== target.workspaceId || row.teamId !== target.teamId) {
      throw invitationErrors.notFound();
    }
    return row;
  }

  async function revoke(invitationId: string, target: { workspaceId: string; teamId: string | null }) {
    const row = await loadScoped(invitationId, target);
    const status = effectiveStatus(row);
    if (status !== 'pending') throw invitationErrors.notPending(status);
    if (!(await repo.resolveLive(db, row.id, 'revoked'))) {
      const now = await repo.findInvitation(db, row.id);
      throw now ? invitationErrors.notPending(effectiveStatus(now)) : invitationErrors.notFound();
    }
  }

  /**
   * The invitation, if the caller may answer it (see `answerDecision`), and whether a mailed token
   * proved their address. To anyone who is not its invitee it does not exist (404).
   */
  async function loadForAnswer(caller: AuthUser, invitationId: string, token: string | undefined) {
    const row = isUuid(invitationId) ? await repo.findInvitation(db, invitationId) : undefined;
    const user = row ? await findUserById(db, caller.id) : undefined;
    if (!row || !user) throw invitationErrors.notFound();
    const decision = answerDecision(row, user, token === undefined ? undefined : sha256Hex(token));
    if (decision === 'not_found') throw invitationErrors.notFound();
    if (decision === 'email_mismatch') throw invitationErrors.emailMismatch();
    if (decision === 'email_not_verified') throw invitationErrors.emailNotVerified();
    return { invitation: row, byToken: decision === 'token' };
  }

  /** Why an invitation cannot be answered any more: 410 when it ran out (marked so now), else 409. */
  async function refusalFor(row: repo.InvitationView | undefined): Promise<AppError> {
    if (!row) return invitationErrors.notFound();
    const status = effectiveStatus(row);
    if (status === 'expired') {
      await repo.expireIfStale(db, row.id);
      return invitationErrors.expired();
    }
    return invitationErrors.notPending(status);
  }

  async function assertLive(row: repo.InvitationView): Promise<void> {
    if (effectiveStatus(row) !== 'pending') throw await refusalFor(row);
  }

  return {
    /** Workspace owner or admin invites someone who is not a member yet. */
    async inviteToWorkspace(caller: AuthUser, workspaceId: string, input: CreateInvitationInput) {
      const access = await requireMember(db, workspaceId, caller.id, { write: true });
      if (!isOwnerOrAdmin(access)) throw workspaceErrors.ownerOrAdminOnly();
      const invitee = await findUserByEmail(db, input.email);
      if (invitee && (await findWorkspaceWithMembership(db, workspaceId, invitee.id))) {
        throw invitationErrors.alreadyMember('workspace');
      }
      const { workspace } = access;
      return invite(caller, { workspaceId, workspaceName: workspace.name, teamId: null, teamName: null }, input);
    },

    /** Team admin or workspace owner/admin invites a member of the workspace who is not in the team. */
    async inviteToTeam(caller: AuthUser, teamId: string, input: CreateInvitationInput) {
      const { team, workspace, actor } = await requireTeamAccess(db, teamId, caller.id, { write: true });
      if (!canManageTeam(actor)) throw teamErrors.teamAdminOnly();
      const invitee = await findUserByEmail(db, input.email);
      if (!invitee || !(await findWorkspaceWithMembership(db, workspace.id, invitee.id))) {
        throw invitationErrors.inviteeNotWorkspaceMember();
      }
      if (await findTeamRole(db, team.id, invitee.id)) throw invitationErrors.alreadyMember('team');
      return invite(
        caller,
        { workspaceId: workspace.id, workspaceName: workspace.name, teamId: team.id, teamName: team.name },
        input,
      );
    },

    async listForWorkspace(callerId: number, workspaceId: string, query: ListQuery) {
      const access = await requireMember(db, workspaceId, callerId);
      if (!isOwnerOrAdmin(access)) throw workspaceErrors.ownerOrAdminOnly();
      return toPageResult(await repo.listInvitations(db, { workspaceId, teamId: null }, query));
    },

    async listForTeam(callerId: number, teamId: string, query: ListQuery) {
      const { team, actor } = await requireTeamAccess(db, teamId, callerId);
      if (!canManageTeam(actor)) throw teamErrors.teamAdminOnly();
      return toPageResult(await repo.listInvitations(db, { workspaceId: team.workspaceId, teamId: team.id }, query));
    },

    async revokeForWorkspace(callerId: number, workspaceId: string, invitationId: string): Promise<void> {
      const access = await requireMember(db, workspaceId, callerId, { write: true });
      if (!isOwnerOrAdmin(access)) throw workspaceErrors.ownerOrAdminOnly();
      await revoke(invitationId, { workspaceId, teamId: null });
    },

    async revokeForTeam(callerId: number, teamId: string, invitationId: string): Promise<void> {
      const { team, actor } = await requireTeamAccess(db, teamId, callerId, { write: true });
      if (!canManageTeam(actor)) throw teamErrors.teamAdminOnly();
      await revoke(invitationId, { workspaceId: team.workspaceId, teamId: team.id });
    },

    /**
     * The caller's pending, unexpired invitations (workspace and team), newest first; only for a
     * verified address (an unproven one sees an empty list: it may be someone else's).
     */
    async listMine(caller: AuthUser, page: PageQuery): Promise<PageResult<InvitationOut>> {
      const user = await findUserById(db, caller.id);
      if (!user || user.emailVerifiedAt === null) return { count: 0, results: [] };
      return toPageResult(await repo.listLiveInvitationsFor(db, normalizeEmail(user.email), page.limit, page.offset));
    },

    /**
     * Joins the workspace (or the team) with the invited role. Single-use under concurrency: the
     * conditional UPDATE in `resolveLive` lets exactly one transaction move the invitation on.
     */
    async accept(caller: AuthUser, invitationId: string, token?: string): Promise<InvitationOut> {
      const { invitation, byToken } = await loadForAnswer(caller, invitationId, token);
      await assertLive(invitation);
      const accepted = await db.transaction(async (tx) => {
        // Locked first, in the same order as member removal and ownership transfer, so that a
        // concurrent removal cannot leave a team membership behind without its workspace membership.
        const workspace = await lockWorkspace(tx, invitation.workspaceId);
        if (!workspace) return undefined;
        assertWritable(workspace);
        if (invitation.teamId && !(await findWorkspaceWithMembership(tx, workspace.id, caller.id))) {
          throw workspaceErrors.notMember();
        }
        const row = await repo.resolveLive(tx, invitation.id, 'accepted');
        if (!row) return undefined;
        // The mailed token proved the address (only while the account still has it).
        if (byToken) await markEmailVerified(tx, caller.id, invitation.email);
        // Someone who is already a member keeps their membership and role as they are.
        if (row.teamId) await insertTeamMembership(tx, { teamId: row.teamId, userId: caller.id, role: row.role });
        else await insertMembership(tx, { workspaceId: row.workspaceId, userId: caller.id, role: row.role });
        return row;
      });
      if (!accepted) throw await refusalFor(await repo.findInvitation(db, invitation.id));
      return toInvitationOut({ ...invitation, ...accepted });
    },

    /** Declining works while the workspace is archived: it changes nothing in the workspace. */
    async decline(caller: AuthUser, invitationId: string, token?: string): Promise<InvitationOut> {
      const { invitation, byToken } = await loadForAnswer(caller, invitationId, token);
      await assertLive(invitation);
      const declined = await db.transaction(async (tx) => {
        const row = await repo.resolveLive(tx, invitation.id, 'declined');
        if (row && byToken) await markEmailVerified(tx, caller.id, invitation.email);
        return row;
      });
      if (!declined) throw await refusalFor(await repo.findInvitation(db, invitation.id));
      return toInvitationOut({ ...invitation, ...declined });
    },
  };
}

export type InvitationsService = ReturnType<typeof createInvitationsService>;
