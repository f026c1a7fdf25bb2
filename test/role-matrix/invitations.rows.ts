import { type MatrixRow, statuses } from './world.js';

let n = 0;
const freshEmail = () => `invitee-${Date.now()}-${++n}@example.com`;

/** Workspace and team invitations, and the invitee's side. */
export const invitationsRows: MatrixRow[] = [
  // --- workspace invitations ---
  {
    route: 'POST /api/workspaces/:id/invitations/',
    request: (w) => ({
      url: `/api/workspaces/${w.workspace.id}/invitations/`,
      body: { email: freshEmail(), role: 'member' },
    }),
    expect: statuses(201, 201, 403, 403, 403),
  },
  {
    route: 'GET /api/workspaces/:id/invitations/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/invitations/` }),
    expect: statuses(200, 200, 403, 403, 403),
  },
  {
    route: 'DELETE /api/workspaces/:id/invitations/:invitationId/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/invitations/${w.invitations.outsider}/` }),
    expect: statuses(204, 204, 403, 403, 403),
  },

  // --- team invitations (the invitee must be a workspace member outside the team) ---
  {
    route: 'POST /api/teams/:id/invitations/',
    request: (w) => ({ url: `/api/teams/${w.team.id}/invitations/`, body: { email: w.users.admin.email } }),
    expect: statuses(201, 201, 403, 404, 403),
  },
  {
    route: 'POST /api/teams/:id/invitations/',
    label: 'a team the member administers',
    request: (w) => ({ url: `/api/teams/${w.memberTeam.id}/invitations/`, body: { email: w.users.owner.email } }),
    expect: statuses(201, 201, 201, 404, 403),
  },
  {
    route: 'GET /api/teams/:id/invitations/',
    request: (w) => ({ url: `/api/teams/${w.team.id}/invitations/` }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'GET /api/teams/:id/invitations/',
    label: 'a team the member administers',
    request: (w) => ({ url: `/api/teams/${w.memberTeam.id}/invitations/` }),
    expect: statuses(200, 200, 200, 404, 403),
  },
  {
    route: 'DELETE /api/teams/:id/invitations/:invitationId/',
    request: (w) => ({ url: `/api/teams/${w.team.id}/invitations/${w.invitations.memberToTeam}/` }),
    expect: statuses(204, 204, 403, 404, 403),
  },

  // --- the invitee's side: only the invitee may answer, everyone else gets 404 (403 with the token) ---
  {
    route: 'GET /api/invitations/',
    request: () => ({ url: '/api/invitations/' }),
    expect: statuses(200, 200, 200, 200, 403),
  },
  {
    route: 'POST /api/invitations/:id/accept/',
    label: "the outsider's workspace invitation",
    request: (w) => ({ url: `/api/invitations/${w.invitations.outsider}/accept/` }),
    expect: statuses(404, 404, 404, 200, 403),
  },
  {
    route: 'POST /api/invitations/:id/accept/',
    label: "the member's team invitation",
    request: (w) => ({ url: `/api/invitations/${w.invitations.memberToTeam}/accept/` }),
    expect: statuses(404, 404, 200, 404, 403),
  },
  {
    route: 'POST /api/invitations/:id/accept/',
    label: "the outsider's workspace invitation, with its mailed token",
    request: (w) => ({ url: `/api/invitations/${w.invitations.outsider}/accept/`, body: { token: w.invitationTokens.outsider } }),
    // Whoever else holds the token is told it is not for their address.
    expect: statuses(403, 403, 403, 200, 403),
  },
  {
    route: 'POST /api/invitations/:id/accept/',
    label: "the outsider's workspace invitation, with a wrong token",
    request: (w) => ({ url: `/api/invitations/${w.invitations.outsider}/accept/`, body: { token: 'not-the-token' } }),
    expect: statuses(404, 404, 404, 404, 403),
  },
  {
    route: 'POST /api/invitations/:id/decline/',
    label: "the outsider's workspace invitation, with its mailed token",
    request: (w) => ({ url: `/api/invitations/${w.invitations.outsider}/decline/`, body: { token: w.invitationTokens.outsider } }),
    expect: statuses(403, 403, 403, 200, 403),
  },
  {
    route: 'POST /api/invitations/:id/decline/',
    label: "the outsider's workspace invitation",
    request: (w) => ({ url: `/api/invitations/${w.invitations.outsider}/decline/` }),
    expect: statuses(404, 404, 404, 200, 403),
  },
  {
    route: 'POST /api/invitations/:id/decline/',
    label: "the member's team invitation",
    request: (w) => ({ url: `/api/invitations/${w.invitations.memberToTeam}/decline/` }),
    expect: statuses(404, 404, 200, 404, 403),
  },
];
