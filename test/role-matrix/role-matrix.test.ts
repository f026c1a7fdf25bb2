import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { billingEnv, billingRows, startBillingFakes, stopBillingFakes } from './billing.rows.js';
import { chatsRows } from './chats.rows.js';
import { coreRows } from './core.rows.js';
import { documentsEnv, documentsRows, startDocumentsSite, stopDocumentsSite } from './documents.rows.js';
import { invitationsRows } from './invitations.rows.js';
import { knowledgeRows } from './knowledge.rows.js';
import { messagesRows, modelEnv, startModelFake, stopModelFake } from './messages.rows.js';
import { planRows } from './plans.rows.js';
import { speechRows } from './speech.rows.js';
import { teamsRows } from './teams.rows.js';
import { buildWorld, type MatrixRow, roles } from './world.js';

/**
 * Every registered API route × every kind of caller, with the exact status each must get.
 * Later modules add their rows to `rows`; the completeness test fails when a route has none.
 */
const rows: MatrixRow[] = [...coreRows, ...teamsRows, ...invitationsRows, ...planRows, ...billingRows, ...chatsRows, ...messagesRows, ...speechRows, ...knowledgeRows, ...documentsRows];

// Routes outside the matrix, each with the reason.
const unlistedRoutes: Record<string, string> = {
  'GET /healthz': 'operations, no authentication',
  'GET /readyz': 'operations, no authentication',
  'GET /metrics': 'operations, METRICS_TOKEN bearer (not a user token)',
  'GET /api/schema/': 'OpenAPI document, public',
  'OPTIONS *': 'CORS preflights (@fastify/cors), answered before authentication',
};
const unlistedPrefixes = ['GET /api/docs', 'PUT /files/', 'GET /files/'];

// The fakes (payment API, model server) must listen before the app is built, which reads `env`.
const env: Record<string, string> = {};
beforeAll(async () => {
  await Promise.all([startBillingFakes(), startModelFake(), startDocumentsSite()]);
  Object.assign(env, billingEnv, modelEnv, documentsEnv, {
    THROTTLE_CHAT_MESSAGES: '10000/minute',
    THROTTLE_TRANSCRIPTIONS: '10000/minute',
    THROTTLE_TRANSLATIONS: '10000/minute',
  });
});
afterAll(async () => {
  await Promise.all([stopBillingFakes(), stopModelFake(), stopDocumentsSite()]);
});
const t = useTestApp(env);

describe('role matrix', () => {
  const cases = rows.flatMap((row) =>
    roles.map((role) => ({ row, role, name: `${row.route}${row.label ? ` (${row.label})` : ''} as ${role}` })),
  );

  it.each(cases)('$name', async ({ row, role }) => {
    const world = await buildWorld(t);
    const { url, body, headers } = await row.request(world, role);
    const method = row.route.split(' ')[0] as 'GET';
    const as = role === 'anonymous' ? null : world.users[role];
    const res = await t.request(method, url, { as, headers, body: body ?? (method === 'GET' || method === 'DELETE' ? undefined : {}) });
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
