/**
 * Public API of the teams module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Team access (`requireTeamAccess`), the manage rule and the team errors.
 */
export { requireTeamAccess } from './teams.access.js';
export { teamErrors } from './teams.errors.js';
export { canManageTeam } from './teams.policy.js';
