import type { Db } from '../../db/client.js';
import { isUuid } from '../../platform/ids.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { toUserOut } from '../users/index.js';
import { requireTeamAccess } from './teams.access.js';
import { teamErrors } from './teams.errors.js';
import { refuseTeamMemberRemoval, refuseTeamRoleChange, type TeamMembershipRefusal } from './teams.policy.js';
import * as repo from './teams.repo.js';
import type { TeamMembershipOut, TeamRole } from './teams.schemas.js';

export function toTeamMembershipOut(row: repo.TeamMembershipWithUser): TeamMembershipOut {
  return {
    id: row.id,
    team: row.teamId,
    user: toUserOut(row.user),
    role: row.role,
    created_at: row.createdAt.toISOString(),
  };
}

const refusalError: Record<TeamMembershipRefusal, () => Error> = {
  not_team_admin: teamErrors.teamAdminOnly,
  own_role: teamErrors.cannotChangeOwnRole,
};

/** Team memberships are read and changed here; they are created only by accepting a team invitation. */
export function createTeamMembershipsService({ db }: { db: Db }) {
  /** The membership if its team is in one of the caller's workspaces (else 404), with the caller's access. */
  async function loadVisible(userId: number, membershipId: string, write: boolean) {
    const target = isUuid(membershipId) ? await repo.findTeamMembershipById(db, membershipId) : undefined;
    if (!target) throw teamErrors.membershipNotFound();
    const access = await requireTeamAccess(db, target.teamId, userId, {
      write,
      notFound: teamErrors.membershipNotFound,
    });
    return { target, access };
  }

  return {
    async list(
      userId: number,
      query: PageQuery & { team?: string; workspace?: string },
    ): Promise<PageResult<TeamMembershipOut>> {
      const { rows, count } = await repo.listVisibleTeamMemberships(db, userId, {
        teamId: query.team,
        workspaceId: query.workspace,
        limit: query.limit,
        offset: query.offset,
      });
      return { count, results: rows.map(toTeamMembershipOut) };
    },

    async mine(userId: number): Promise<TeamMembershipOut[]> {
      return (await repo.listTeamMembershipsOfUser(db, userId)).map(toTeamMembershipOut);
    },

    async get(userId: number, membershipId: string): Promise<TeamMembershipOut> {
      return toTeamMembershipOut((await loadVisible(userId, membershipId, false)).target);
    },

    async changeRole(userId: number, membershipId: string, role: TeamRole): Promise<TeamMembershipOut> {
      const { target, access } = await loadVisible(userId, membershipId, true);
      const refusal = refuseTeamRoleChange(access.actor, target);
      if (refusal) throw refusalError[refusal]();
      await repo.setTeamMembershipRole(db, target.id, role);
      return toTeamMembershipOut({ ...target, role });
    },

    /** Removes someone from a team (team admin, workspace owner or admin) or lets a member leave it. */
    async remove(userId: number, membershipId: string): Promise<void> {
      const { target, access } = await loadVisible(userId, membershipId, true);
      const refusal = refuseTeamMemberRemoval(access.actor, target);
      if (refusal) throw refusalError[refusal]();
      await repo.deleteTeamMembership(db, target.id);
    },
  };
}

export type TeamMembershipsService = ReturnType<typeof createTeamMembershipsService>;
