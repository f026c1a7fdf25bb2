import type { Db } from '../../db/client.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { requireMember } from '../workspaces/index.js';
import { workspaceErrors } from '../workspaces/index.js';
import { requireTeamAccess } from './teams.access.js';
import { teamErrors } from './teams.errors.js';
import { canCreateTeam, canManageTeam } from './teams.policy.js';
import * as repo from './teams.repo.js';
import type { TeamChanges, TeamOut } from './teams.schemas.js';

export function toTeamOut(row: repo.TeamRow): TeamOut {
  return {
    id: row.id,
    workspace: row.workspaceId,
    name: row.name,
    description: row.description,
    created_at: row.createdAt.toISOString(),
  };
}

export function createTeamsService({ db }: { db: Db }) {
  return {
    async list(userId: number, query: PageQuery & { workspace?: string }): Promise<PageResult<TeamOut>> {
      const { rows, count } = await repo.listVisibleTeams(db, userId, {
        workspaceId: query.workspace,
        limit: query.limit,
        offset: query.offset,
      });
      return { count, results: rows.map(toTeamOut) };
    },

    /** Workspace owner or admin; the creator becomes the team's first `admin` member. */
    async create(userId: number, input: { workspace: string; name: string; description: string }): Promise<TeamOut> {
      const access = await requireMember(db, input.workspace, userId, { write: true });
      if (!canCreateTeam(access)) throw workspaceErrors.ownerOrAdminOnly();
      return db.transaction(async (tx) => {
        const team = await repo.insertTeam(tx, {
          workspaceId: input.workspace,
          name: input.name,
          description: input.description,
          createdBy: userId,
        });
        // The (workspace, name) unique index decides concurrent creations too.
        if (!team) throw teamErrors.nameTaken();
        await repo.insertTeamMembership(tx, { teamId: team.id, userId, role: 'admin' });
        return toTeamOut(team);
      });
    },

    async get(userId: number, teamId: string): Promise<TeamOut> {
      return toTeamOut((await requireTeamAccess(db, teamId, userId)).team);
    },

    async update(userId: number, teamId: string, changes: TeamChanges): Promise<TeamOut> {
      const { team, actor } = await requireTeamAccess(db, teamId, userId, { write: true });
      if (!canManageTeam(actor)) throw teamErrors.teamAdminOnly();
      if (changes.name === undefined && changes.description === undefined) return toTeamOut(team);
      const updated = await repo.updateTeam(db, team.id, changes);
      if (updated === 'name_taken') throw teamErrors.nameTaken();
      return toTeamOut(updated);
    },

    /** Deletes the team with its memberships and invitations. */
    async delete(userId: number, teamId: string): Promise<void> {
      const { team, actor } = await requireTeamAccess(db, teamId, userId, { write: true });
      if (!canManageTeam(actor)) throw teamErrors.teamAdminOnly();
      await repo.deleteTeam(db, team.id);
    },
  };
}

export type TeamsService = ReturnType<typeof createTeamsService>;
