import type { DbOrTx } from '../../db/client.js';
import type { AppError } from '../../platform/errors.js';
import { isUuid } from '../../platform/ids.js';
import { assertWritable, requireMember, type WorkspaceAccess } from '../workspaces/index.js';
import { teamErrors } from './teams.errors.js';
import type { TeamActor } from './teams.policy.js';
import { findTeam, findTeamRole, type TeamRow } from './teams.repo.js';

export interface TeamAccess {
  team: TeamRow;
  workspace: WorkspaceAccess['workspace'];
  actor: TeamActor;
}

/**
 * The guard of every team-scoped operation: the team if the caller is a current member of its
 * workspace, else 404 (a team is an object inside a workspace, so outsiders do not learn it
 * exists). With `write`, an archived workspace answers 409 `workspace_archived`. `notFound` names
 * the object the caller asked for (a team membership, an invitation) when it is not the team.
 */
export async function requireTeamAccess(
  db: DbOrTx,
  teamId: string,
  userId: number,
  options: { write?: boolean; notFound?: () => AppError } = {},
): Promise<TeamAccess> {
  const notFound = options.notFound ?? teamErrors.teamNotFound;
  const team = isUuid(teamId) ? await findTeam(db, teamId) : undefined;
  if (!team) throw notFound();
  const access = await requireMember(db, team.workspaceId, userId).catch(() => {
    throw notFound();
  });
  if (options.write) assertWritable(access.workspace);
  const teamRole = await findTeamRole(db, team.id, userId);
  return {
    team,
    workspace: access.workspace,
    actor: { userId, role: access.role, isOwner: access.isOwner, teamRole },
  };
}
