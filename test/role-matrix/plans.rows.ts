import { type MatrixRow, statuses } from './world.js';

/** Plan, credit and model-catalog reads: any member; outsiders 403. */
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
];
