import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { coreRows } from './core.rows.js';
import { buildWorld, type MatrixRow, roles } from './world.js';

/**
 * Every registered API route × every kind of caller, with the exact status each must get.
 * Later modules add their rows to `rows`; the completeness test fails when a route has none.
 */
const rows: MatrixRow[] = [...coreRows];

// Routes outside the matrix, each with the reason.
const unlistedRoutes: Record<string, string> = {
  'GET /healthz': 'operations, no authentication',
  'GET /readyz': 'operations, no authentication',
  'GET /metrics': 'operations, no authentication',
  'GET /api/schema/': 'OpenAPI document, public',
};
const unlistedPrefixes = ['GET /api/docs', 'PUT /files/', 'GET /files/'];

const t = useTestApp();

describe('role matrix', () => {
  const cases = rows.flatMap((row) =>
    roles.map((role) => ({ row, role, name: `${row.route}${row.label ? ` (${row.label})` : ''} as ${role}` })),
  );

  it.each(cases)('$name', async ({ row, role }) => {
    const world = await buildWorld(t);
    const { url, body } = await row.request(world, role);
    const method = row.route.split(' ')[0] as 'GET';
    const as = role === 'anonymous' ? null : world.users[role];
    const res = await t.request(method, url, { as, body: body ?? (method === 'GET' || method === 'DELETE' ? undefined : {}) });
    expect(res.statusCode, `${row.route} as ${role}: ${res.body}`).toBe(row.expect[role]);
  });

  it('has a row for every registered API route', () => {
    const covered = new Set(rows.map((r) => r.route));
    const missing = t.app.registeredRoutes.filter(
      (route) =>
        !covered.has(route) && !(route in unlistedRoutes) && !unlistedPrefixes.some((prefix) => route.startsWith(prefix)),
    );
    expect(missing).toEqual([]);
    const stale = [...covered].filter((route) => !t.app.registeredRoutes.includes(route));
    expect(stale).toEqual([]);
  });
});
