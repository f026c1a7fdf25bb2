/**
 * Public API of the teams module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Team access (`requireTeamAccess`), the manage rule and the team errors.
 */
export { requireTeamAccess } from './teams.access.js';
export { teamErrors } from './teams.errors.js';
export { canManageTeam } from './teams.policy.js';
/** Run by workspaces (through src/deps.ts) when a member leaves or is removed, in that transaction. */
export { removeUserFromWorkspaceTeams } from './teams.repo.js';
/** Team lookups: knowledge bases check a team, invitations add the invited person to one. */
export { findTeam, findTeamRole, insertTeamMembership } from './teams.repo.js';
