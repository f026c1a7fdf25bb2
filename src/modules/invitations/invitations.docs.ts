import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { createInvitationBody, invitationOut } from './invitations.schemas.js';

namedSchema(invitationOut, 'Invitation', {
  description: 'An invitation to a workspace (`team: null`) or to one of its teams, mailed to `email`.',
  example: {
    id: '0198f2f0-6b7c-7d8e-9f0a-1b2c3d4e5f60',
    workspace: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a',
    team: null,
    email: 'li.wei@example.com',
    role: 'member',
    status: 'pending',
    expires_at: '2025-03-21T09:00:00.000Z',
    created_at: '2025-03-14T09:00:00.000Z',
    workspace_name: 'Acme Support',
    team_name: null,
    invited_by: { id: 42, email: 'ana.silva@example.com', name: 'Ana Silva' },
  },
});
namedSchema(createInvitationBody, 'InvitationCreate', {
  description: '`role` is the workspace role, or the team role for a team invitation.',
  example: { email: 'li.wei@example.com', role: 'member' },
});

const wsManager = { 403: ['not_workspace_member', 'permission_denied'], 409: ['workspace_archived'] };
const teamManager = { 403: ['permission_denied'], 409: ['workspace_archived'] };
const answer = {
  403: ['invitation_email_mismatch', 'email_not_verified', 'not_workspace_member'],
  409: ['invitation_not_pending', 'workspace_archived'],
  410: ['invitation_expired'],
};

export const invitationsDocs: OperationDocs = {
  'POST /api/workspaces/:id/invitations/': {
    operationId: 'workspace_invitations_create',
    summary: 'Invite someone to a workspace',
    description:
      'The workspace owner or an admin (403 `permission_denied`). Mails an accept link to the address. 400 ' +
      '`already_member` when the person is already a member; 409 `invitation_pending` while another invitation for ' +
      'the address is pending.',
    errors: { ...wsManager, 400: ['already_member'], 409: ['invitation_pending', 'workspace_archived'] },
  },
  'GET /api/workspaces/:id/invitations/': {
    operationId: 'workspace_invitations_list',
    summary: "List a workspace's invitations",
    description: "The workspace owner or an admin: the workspace's invitations (not its teams'), newest first; `?status=` filters.",
    errors: { 403: ['not_workspace_member', 'permission_denied'] },
  },
  'DELETE /api/workspaces/:id/invitations/:invitationId/': {
    operationId: 'workspace_invitations_revoke',
    summary: 'Revoke a workspace invitation',
    description: 'The workspace owner or an admin revokes a pending invitation (409 `invitation_not_pending` otherwise).',
    errors: { ...wsManager, 409: ['invitation_not_pending', 'workspace_archived'] },
  },
  'POST /api/teams/:id/invitations/': {
    operationId: 'team_invitations_create',
    summary: 'Invite a workspace member to a team',
    description:
      'Team admin, workspace owner or workspace admin (403 `permission_denied`). The invitee must already be a member ' +
      'of the workspace (400 `invitee_not_workspace_member`); `role` is the team role. 400 `already_member`, 409 ' +
      '`invitation_pending` as for workspaces.',
    errors: {
      ...teamManager,
      400: ['invitee_not_workspace_member', 'already_member'],
      409: ['invitation_pending', 'workspace_archived'],
    },
  },
  'GET /api/teams/:id/invitations/': {
    operationId: 'team_invitations_list',
    summary: "List a team's invitations",
    description: "Team admin, workspace owner or workspace admin: the team's invitations, newest first.",
    errors: { 403: ['permission_denied'] },
  },
  'DELETE /api/teams/:id/invitations/:invitationId/': {
    operationId: 'team_invitations_revoke',
    summary: 'Revoke a team invitation',
    description: 'Team admin, workspace owner or workspace admin revokes a pending team invitation (409 `invitation_not_pending` otherwise).',
    errors: { ...teamManager, 409: ['invitation_not_pending', 'workspace_archived'] },
  },
  'GET /api/invitations/': {
    operationId: 'invitations_mine',
    summary: 'List your pending invitations',
    description:
      'Your pending, unexpired invitations (matched by your email address), newest first. Empty while your address ' +
      'is not verified. A workspace-restricted API key gets 403 `api_key_workspace_denied`.',
  },
  'POST /api/invitations/:id/accept/': {
    operationId: 'invitations_accept',
    summary: 'Accept an invitation',
    description:
      'The invitee joins the workspace (or team) with the invited role. Proof of the address: `{"token"}` from the ' +
      "invitation mail (which also verifies the account's address), or no body when the account's address is " +
      "verified and is the invitation's. 403 `invitation_email_mismatch` (the token, another account's address), 403 " +
      '`email_not_verified` (no token, unverified address); 404 for anyone else and for a token that is not this ' +
      "invitation's; 409 `invitation_not_pending` once accepted, declined or revoked; 410 `invitation_expired`; 409 " +
      '`workspace_archived`. A team invitation needs current membership of the workspace (403).',
    errors: answer,
    requestExample: { token: 'Zk3vQ9sLx2N8pR4tW7yB1cD5fG0hJ6mK' },
  },
  'POST /api/invitations/:id/decline/': {
    operationId: 'invitations_decline',
    summary: 'Decline an invitation',
    description: 'The invitee declines. Same proof of the address, and the same 403, 404, 409 and 410 rules, as accept.',
    errors: answer,
    requestExample: { token: 'Zk3vQ9sLx2N8pR4tW7yB1cD5fG0hJ6mK' },
  },
};
