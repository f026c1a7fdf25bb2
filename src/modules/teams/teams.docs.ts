import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { createTeamBody, teamMembershipOut, teamOut } from './teams.schemas.js';

const team = {
  id: '0198f2e0-4f5a-7b6c-8d7e-9f0a1b2c3d4e',
  workspace: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a',
  name: 'Billing specialists',
  description: 'Answers questions about invoices and refunds.',
  created_at: '2025-03-05T13:20:00.000Z',
};

namedSchema(teamOut, 'Team', { description: 'A team inside a workspace.', example: team });
namedSchema(createTeamBody, 'TeamCreate', {
  description: 'A new team in a workspace you own or administer.',
  example: { workspace: team.workspace, name: team.name, description: team.description },
});
namedSchema(teamMembershipOut, 'TeamMembership', {
  description: "A person's membership of a team and their team role.",
  example: {
    id: '0198f2e1-5a6b-7c8d-9e0f-1a2b3c4d5e6f',
    team: team.id,
    user: { id: 57, email: 'maria.lopez@example.com', name: 'Maria Lopez' },
    role: 'member',
    created_at: '2025-03-06T09:00:00.000Z',
  },
});

const manager = 'The team\'s admins, the workspace owner and workspace admins (403 `permission_denied`); others who cannot see the team get 404.';
const manage = { 403: ['permission_denied'], 409: ['workspace_archived'] };

export const teamsDocs: OperationDocs = {
  'GET /api/teams/': {
    operationId: 'teams_list',
    summary: 'List teams',
    description: 'Teams of every workspace you belong to; `?workspace=` narrows to one workspace (403 when not a member).',
    errors: { 403: ['not_workspace_member'] },
  },
  'POST /api/teams/': {
    operationId: 'teams_create',
    summary: 'Create a team',
    description:
      'The workspace owner or an admin (403 `permission_denied`). The creator becomes the first member of the team, ' +
      'with the `admin` team role. Team names are unique within a workspace (400 `team_name_taken`).',
    errors: { 400: ['team_name_taken'], 403: ['not_workspace_member', 'permission_denied'], 409: ['workspace_archived'] },
  },
  'GET /api/teams/:id/': {
    operationId: 'teams_get',
    summary: 'Get a team',
    description: 'Members of the team\'s workspace; others get 404.',
  },
  'PUT /api/teams/:id/': {
    operationId: 'teams_replace',
    summary: 'Rename a team (PUT)',
    description: `${manager} \`name\` is required; a description left out stays as it is. 400 \`team_name_taken\`.`,
    errors: { ...manage, 400: ['team_name_taken'] },
    requestExample: { name: 'Billing and refunds', description: 'Invoices, refunds and chargebacks.' },
  },
  'PATCH /api/teams/:id/': {
    operationId: 'teams_update',
    summary: 'Update a team',
    description: `${manager} 400 \`team_name_taken\`.`,
    errors: { ...manage, 400: ['team_name_taken'] },
    requestExample: { description: 'Invoices, refunds and chargebacks.' },
  },
  'DELETE /api/teams/:id/': {
    operationId: 'teams_delete',
    summary: 'Delete a team',
    description: `${manager} Deletes the team, its memberships and invitations.`,
    errors: manage,
  },
};

export const teamMembershipsDocs: OperationDocs = {
  'GET /api/teammemberships/': {
    operationId: 'team_memberships_list',
    summary: 'List team memberships',
    description: 'Memberships of the teams in your workspaces; `?team=` and `?workspace=` narrow the list.',
    errors: { 403: ['not_workspace_member'] },
  },
  'GET /api/teammemberships/mine/': {
    operationId: 'team_memberships_mine',
    summary: 'List your team memberships',
    description: 'The signed-in user\'s team memberships.',
  },
  'GET /api/teammemberships/:id/': {
    operationId: 'team_memberships_get',
    summary: 'Get a team membership',
    description: 'Members of the team\'s workspace; others get 404.',
  },
  'PUT /api/teammemberships/:id/': {
    operationId: 'team_memberships_replace',
    summary: 'Change a team role (PUT)',
    description: 'Same as PATCH.',
    errors: { 403: ['permission_denied', 'cannot_change_own_role'], 409: ['workspace_archived'] },
    requestExample: { role: 'admin' },
  },
  'PATCH /api/teammemberships/:id/': {
    operationId: 'team_memberships_update',
    summary: 'Change a team role',
    description:
      'Team admin, workspace owner or workspace admin (403 `permission_denied`). A team admin cannot change their own ' +
      'team role (403 `cannot_change_own_role`); the workspace owner and admins can.',
    errors: { 403: ['permission_denied', 'cannot_change_own_role'], 409: ['workspace_archived'] },
    requestExample: { role: 'admin' },
  },
  'DELETE /api/teammemberships/:id/': {
    operationId: 'team_memberships_delete',
    summary: 'Remove a team member or leave a team',
    description: 'Team admin, workspace owner or workspace admin removes a member (403 `permission_denied`); any member may leave a team.',
    errors: { 403: ['permission_denied'], 409: ['workspace_archived'] },
  },
};
