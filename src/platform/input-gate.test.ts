import { count, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../test/support/app.js';
import { newUser, newWorkspace } from '../../test/support/factories.js';
import { captureLog } from '../../test/support/log.js';
import { deliver, providerEvent, subscriptionObject, TEST_WEBHOOK_SECRET } from '../../test/support/webhook.js';
import { truncateAll } from '../../test/support/db.js';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { webhookEvents } from '../modules/billing/billing.table.js';
import { chatSessions } from '../modules/chats/chats.table.js';
import { teams } from '../modules/teams/teams.table.js';
import { users } from '../modules/users/users.table.js';
import { workspaces } from '../modules/workspaces/workspaces.table.js';
import { findTextProblems, NUL_MESSAGE, SURROGATE_MESSAGE, textProblem } from './input-gate.js';

/*
 * The input gate through the real app: NUL and lone surrogates in any string of any route are
 * 400 validation_error naming the field, before anything reaches the database (PostgreSQL
 * refuses NUL; the failure used to be a 500 whose log held the statement's parameters, for a
 * registration the new user's argon2id hash).
 */

const NUL = 'a\u0000b';
const LONE = 'x\ud800y';

const logs = captureLog('info');
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET }, {}, { log: logs.log });
});
beforeEach(async () => {
  await truncateAll(t.database);
});
afterAll(async () => {
  await t.close();
});

const rows = async (table: typeof users | typeof workspaces | typeof teams | typeof chatSessions) =>
  (await t.deps.database.db.select({ n: count() }).from(table))[0]!.n;

function expectGateError(res: { statusCode: number; json(): unknown; body: string }, field: string, message = NUL_MESSAGE) {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json()).toEqual({ detail: expect.any(String), code: 'validation_error', errors: { [field]: [message] } });
}

/** Nothing of the failed statement or its parameters was logged. */
function expectCleanLog() {
  const text = JSON.stringify(logs.lines());
  expect(text).not.toContain('argon2');
  expect(text).not.toContain('Failed query');
  expect(text).not.toContain('params:');
  expect(logs.lines().filter((line) => line.level >= 50)).toEqual([]);
}

describe('textProblem / findTextProblems', () => {
  it('finds NUL and lone surrogates, and accepts paired surrogates (emoji)', () => {
    expect(textProblem('plain')).toBeUndefined();
    expect(textProblem('emoji \ud83d\ude00 ok')).toBeUndefined();
    expect(textProblem(NUL)).toBe(NUL_MESSAGE);
    expect(textProblem('\ud800')).toBe(SURROGATE_MESSAGE);
    expect(textProblem('\udc00x')).toBe(SURROGATE_MESSAGE);
    expect(textProblem('\ude00\ud83d')).toBe(SURROGATE_MESSAGE);
  });

  it('names nested fields and bad keys, never echoing a long or odd key', () => {
    const errors = findTextProblems({ a: { b: [1, 'ok', NUL] }, ['k\u0000']: 1, ['x'.repeat(500)]: LONE, list: [{ c: LONE }] });
    expect(errors).toEqual({
      'a.b.2': [NUL_MESSAGE],
      non_field_errors: [expect.stringContaining('Field names')],
      '*': [SURROGATE_MESSAGE],
      'list.0.c': [SURROGATE_MESSAGE],
    });
  });

  it('walks a deeply nested body without overflowing the stack', () => {
    let deep: unknown = NUL;
    for (let i = 0; i < 100_000; i += 1) deep = [deep];
    expect(Object.keys(findTextProblems(deep))).toHaveLength(1);
  });
});

describe('anonymous account endpoints', () => {
  it.each([
    ['email', { email: `ada${NUL}@example.com`, password: 'analytical-engine', name: 'Ada' }],
    ['password', { email: 'ada@example.com', password: `analytical${NUL}engine`, name: 'Ada' }],
    ['name', { email: 'ada@example.com', password: 'analytical-engine', name: `Ada${NUL}` }],
  ])('registration with a NUL in %s is 400 naming it; nothing stored or logged', async (field, body) => {
    const res = await t.post('/auth/users/', body);
    expectGateError(res, field);
    expect(await rows(users)).toBe(0);
    expectCleanLog();
  });

  it('registration with a lone surrogate in the name is 400', async () => {
    const res = await t.post('/auth/users/', { email: 'ada@example.com', password: 'analytical-engine', name: LONE });
    expectGateError(res, 'name', SURROGATE_MESSAGE);
    expect(await rows(users)).toBe(0);
  });

  it.each(['email', 'password'])('login with a NUL in %s is 400 naming it', async (field) => {
    const user = await newUser(t);
    const body = { email: user.email, password: user.password, [field]: NUL };
    expectGateError(await t.post('/auth/token/login/', body), field);
    expectCleanLog();
  });

  it('reset_password with a NUL in the email is 400 naming it', async () => {
    expectGateError(await t.post('/auth/users/reset_password/', { email: `x${NUL}@example.com` }), 'email');
    expectCleanLog();
  });

  it('a NUL in a nested unknown key of an anonymous body is 400 too', async () => {
    const res = await t.post('/auth/token/login/', { email: 'a@example.com', password: 'p', extra: { deep: [NUL] } });
    expectGateError(res, 'extra.deep.0');
  });
});

describe('authenticated fields, query and path', () => {
  it('workspace, team and chat names with NUL or lone surrogates are 400; nothing stored', async () => {
    const owner = await newUser(t);
    expectGateError(await t.post('/api/workspaces/', { name: NUL }, owner), 'name');
    expect(await rows(workspaces)).toBe(0);
    const ws = await newWorkspace(t, owner);
    expectGateError(await t.post('/api/teams/', { workspace: ws.id, name: LONE }, owner), 'name', SURROGATE_MESSAGE);
    expect(await rows(teams)).toBe(0);
    const chat = await t.post(`/api/workspaces/${ws.id}/chats/`, { name: 'ok', system_prompt: NUL }, owner);
    expectGateError(chat, 'system_prompt');
    const params = await t.post(`/api/workspaces/${ws.id}/chats/`, { name: 'ok', model_parameters: { [`k${NUL}`]: 1 } }, owner);
    expect(params.statusCode).toBe(400);
    expect(params.json().errors).toEqual({ model_parameters: [expect.stringContaining('Field names')] });
    expect(await rows(chatSessions)).toBe(0);
    const renamed = await t.patch(`/api/workspaces/${ws.id}/`, { name: `Team${NUL}` }, owner);
    expectGateError(renamed, 'name');
    expect((await t.deps.database.db.select().from(workspaces).where(eq(workspaces.id, ws.id)))[0]!.name).toBe('Test Workspace');
    expectCleanLog();
  });

  it('a NUL in a query parameter or a path parameter is 400 naming it', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const query = await t.request('GET', `/api/teams/?workspace=${ws.id}%00`, { as: owner });
    expectGateError(query, 'workspace');
    expect(query.json().detail).toBe('Invalid input in querystring.');
    const path = await t.get(`/api/workspaces/${ws.id}%00/`, owner);
    expectGateError(path, 'id');
    expect(path.json().detail).toBe('Invalid input in params.');
  });

  it('the check runs after authentication: an anonymous caller still gets 403', async () => {
    const res = await t.post('/api/workspaces/', { name: NUL }, null);
    expect(res.statusCode).toBe(403);
  });

  it('paired surrogates (emoji) are text and pass', async () => {
    const owner = await newUser(t);
    const res = await t.post('/api/workspaces/', { name: 'Rocket \ud83d\ude80' }, owner);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().name).toBe('Rocket 🚀');
  });
});

describe('the payment webhook', () => {
  it('a signed event with a NUL is 400 (the provider stops retrying) and is not recorded', async () => {
    const event = providerEvent('customer.subscription.created', subscriptionObject({ customer: `cus_${NUL}` }));
    const res = await deliver(t, event);
    expectGateError(res, 'data.object.customer');
    expect(await t.deps.database.db.select().from(webhookEvents)).toEqual([]);
    const metadata = providerEvent('customer.subscription.updated', subscriptionObject({ extra: { metadata: { note: LONE } } }));
    expectGateError(await deliver(t, metadata), 'data.object.metadata.note', SURROGATE_MESSAGE);
    expectCleanLog();
  });

  it('the signature is checked first: an unsigned event with a NUL is invalid_signature', async () => {
    const event = providerEvent('customer.subscription.created', subscriptionObject({ customer: `cus_${NUL}` }));
    const res = await deliver(t, event, { header: 't=1,v1=00' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_signature');
  });
});
