import { isOwnerOrAdmin, type MemberContext } from '../workspaces/index.js';
import type { TeamRole } from './teams.schemas.js';

/** The caller's standing towards one team: their workspace role plus their team role, if any. */
export interface TeamActor extends MemberContext {
  teamRole: TeamRole | null;
}

export const canCreateTeam = isOwnerOrAdmin;

/** "Team or workspace owner/admin" in the spec: a team admin, the workspace owner or a workspace admin. */
export const canManageTeam = (actor: TeamActor): boolean => isOwnerOrAdmin(actor) || actor.teamRole === 'admin';

export type TeamMembershipRefusal = 'not_team_admin' | 'own_role';

/**
 * PUT team role: team admins and workspace owner/admins. A team admin may not change their own
 * team role (a slip would lock them out); the workspace owner and admins keep control anyway.
 */
export function refuseTeamRoleChange(actor: TeamActor, target: { userId: number }): TeamMembershipRefusal | null {
  if (!canManageTeam(actor)) return 'not_team_admin';
  if (target.userId === actor.userId && !isOwnerOrAdmin(actor)) return 'own_role';
  return null;
}

/** DELETE team membership: anyone may leave a team; removing someone else needs team management rights. */
export function refuseTeamMemberRemoval(actor: TeamActor, target: { userId: number }): TeamMembershipRefusal | null {
  if (target.userId === actor.userId) return null;
  return canManageTeam(actor) ? null : 'not_team_admin';
}
