import { type MatrixRow, statuses } from './world.js';

/** Plan, credit, usage and model-catalog reads: any member (usage: a member sees their own rows); outsiders 403. */
export const planRows: MatrixRow[] = [
  {
    route: 'GET /api/workspaces/:id/plan/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/plan/` }),
    expect: statuses(200, 200, 200, 403, 403),
  },
  {
    route: 'GET /api/workspaces/:id/credit-usage/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/credit-usage/` }),
    expect: statuses(200, 200, 200, 403, 403),
  },
  {
    route: 'GET /api/workspaces/:id/ai-models/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/ai-models/` }),
    expect: statuses(200, 200, 200, 403, 403),
  },

  {
    route: 'GET /api/workspaces/:id/usage/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/usage/?group_by=user` }),
    expect: statuses(200, 200, 200, 403, 403),
  },
  {
    route: 'GET /api/workspaces/:id/usage/',
    label: 'csv',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/usage/?group_by=model&format=csv` }),
    expect: statuses(200, 200, 200, 403, 403),
  },
];
