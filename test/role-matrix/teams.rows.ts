import { type MatrixRow, statuses } from './world.js';

// The plain member is the team admin of `memberTeam` and has no role in `team` (Core):
// rows on Core show workspace-role rules, rows on memberTeam show team-admin rights.

/** Teams and team memberships. */
export const teamsRows: MatrixRow[] = [
  // --- teams ---
  { route: 'GET /api/teams/', request: () => ({ url: '/api/teams/' }), expect: statuses(200, 200, 200, 200, 403) },
  {
    route: 'POST /api/teams/',
    request: (w) => ({ url: '/api/teams/', body: { workspace: w.workspace.id, name: 'New team' } }),
    expect: statuses(201, 201, 403, 403, 403),
  },
  {
    route: 'GET /api/teams/:id/',
    request: (w) => ({ url: `/api/teams/${w.team.id}/` }),
    expect: statuses(200, 200, 200, 404, 403),
  },
  {
    route: 'PUT /api/teams/:id/',
    request: (w) => ({ url: `/api/teams/${w.team.id}/`, body: { name: 'Renamed' } }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'PUT /api/teams/:id/',
    label: 'a team the member administers',
    request: (w) => ({ url: `/api/teams/${w.memberTeam.id}/`, body: { name: 'Renamed' } }),
    expect: statuses(200, 200, 200, 404, 403),
  },
  {
    route: 'PATCH /api/teams/:id/',
    request: (w) => ({ url: `/api/teams/${w.team.id}/`, body: { description: 'Changed' } }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'PATCH /api/teams/:id/',
    label: 'a team the member administers',
    request: (w) => ({ url: `/api/teams/${w.memberTeam.id}/`, body: { description: 'Changed' } }),
    expect: statuses(200, 200, 200, 404, 403),
  },
  {
    route: 'DELETE /api/teams/:id/',
    request: (w) => ({ url: `/api/teams/${w.team.id}/` }),
    expect: statuses(204, 204, 403, 404, 403),
  },
  {
    route: 'DELETE /api/teams/:id/',
    label: 'a team the member administers',
    request: (w) => ({ url: `/api/teams/${w.memberTeam.id}/` }),
    expect: statuses(204, 204, 204, 404, 403),
  },

  // --- team memberships ---
  {
    route: 'GET /api/teammemberships/',
    request: () => ({ url: '/api/teammemberships/' }),
    expect: statuses(200, 200, 200, 200, 403),
  },
  {
    route: 'GET /api/teammemberships/mine/',
    request: () => ({ url: '/api/teammemberships/mine/' }),
    expect: statuses(200, 200, 200, 200, 403),
  },
  {
    route: 'GET /api/teammemberships/:id/',
    request: (w) => ({ url: `/api/teammemberships/${w.teamMemberships.member2}/` }),
    expect: statuses(200, 200, 200, 404, 403),
  },
  {
    route: 'PUT /api/teammemberships/:id/',
    request: (w) => ({ url: `/api/teammemberships/${w.teamMemberships.member2}/`, body: { role: 'admin' } }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'PUT /api/teammemberships/:id/',
    label: 'member2 in a team the member administers',
    request: (w) => ({ url: `/api/teammemberships/${w.memberTeam.memberships.member2}/`, body: { role: 'admin' } }),
    expect: statuses(200, 200, 200, 404, 403),
  },
  {
    route: 'PUT /api/teammemberships/:id/',
    label: "the member's own team-admin membership",
    request: (w) => ({ url: `/api/teammemberships/${w.memberTeam.memberships.member}/`, body: { role: 'member' } }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'PATCH /api/teammemberships/:id/',
    request: (w) => ({ url: `/api/teammemberships/${w.teamMemberships.member2}/`, body: { role: 'admin' } }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'DELETE /api/teammemberships/:id/',
    request: (w) => ({ url: `/api/teammemberships/${w.teamMemberships.member2}/` }),
    expect: statuses(204, 204, 403, 404, 403),
  },
  {
    route: 'DELETE /api/teammemberships/:id/',
    label: 'member2 in a team the member administers',
    request: (w) => ({ url: `/api/teammemberships/${w.memberTeam.memberships.member2}/` }),
    expect: statuses(204, 204, 204, 404, 403),
  },
  {
    route: 'DELETE /api/teammemberships/:id/',
    label: "the member's own membership (leaving the team)",
    request: (w) => ({ url: `/api/teammemberships/${w.memberTeam.memberships.member}/` }),
    expect: statuses(204, 204, 204, 404, 403),
  },
];
