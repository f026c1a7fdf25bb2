import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp, type TestApp } from '../../../test/support/app.js';
import {
  addMember,
  newInvitation,
  newUser,
  newWorkspace,
  type TestUser,
} from '../../../test/support/factories.js';
import { lastMailTo, mailsTo, tokenIn } from '../../../test/support/mail.js';
import { randomToken, sha256Hex } from '../../platform/secrets.js';
import { users } from '../users/users.table.js';
import { workspaceMemberships } from '../workspaces/workspaces.table.js';
import { invitations } from './invitations.table.js';

/**
 * Invitations need proof of the address: the mailed token, or a verified account with the
 * invitation's address. The attacks these tests replay are the ones an attacker's run found.
 */

// Many logins from one client IP: the throttle has its own tests (auth.throttle.test.ts).
const t = useTestApp({ THROTTLE_LOGIN: '1000/minute' });
/** The same service with sign-up closed. */
const closed = useTestApp({ ALLOW_SIGNUP: 'false', THROTTLE_LOGIN: '1000/minute' });
const db = (app: TestApp = t) => app.deps.database.db;

const VICTIM = 'victim@example.com';

/** Workspace A (owner Alice) invites VICTIM as admin through the API; the mail carries the token. */
async function adminInvitation(app: TestApp = t) {
  const alice = await newUser(app, { name: 'Alice' });
  const workspace = await newWorkspace(app, alice, 'A');
  const res = await app.post(`/api/workspaces/${workspace.id}/invitations/`, { email: VICTIM, role: 'admin' }, alice);
  expect(res.statusCode).toBe(201);
  const id = res.json().id as string;
  const token = tokenIn(await lastMailTo(app, VICTIM));
  return { alice, workspace, id, token };
}

const invitationRow = async (id: string, app: TestApp = t) =>
  (await db(app).select().from(invitations).where(eq(invitations.id, id)))[0]!;
const userRow = async (id: number, app: TestApp = t) =>
  (await db(app).select().from(users).where(eq(users.id, id)))[0]!;
const membershipsOf = (workspaceId: string, userId: number, app: TestApp = t) =>
  db(app)
    .select()
    .from(workspaceMemberships)
    .where(and(eq(workspaceMemberships.workspaceId, workspaceId), eq(workspaceMemberships.userId, userId)));
const accept = (id: string, as: TestUser, body?: unknown, app: TestApp = t) =>
  app.request('POST', `/api/invitations/${id}/accept/`, { as, ...(body === undefined ? {} : { body }) });
const decline = (id: string, as: TestUser, body?: unknown) =>
  t.request('POST', `/api/invitations/${id}/decline/`, { as, ...(body === undefined ? {} : { body }) });
const listMine = async (as: TestUser, app: TestApp = t) => (await app.get('/api/invitations/', as)).json();

/** Logs in through the API (an account made by registration has no test token). */
async function loginAs(app: TestApp, email: string, password: string): Promise<TestUser> {
  const res = await app.post('/auth/token/login/', { email, password });
  expect(res.statusCode).toBe(200);
  const me = (await app.get('/auth/users/me/', { token: res.json().auth_token })).json();
  return { ...me, token: res.json().auth_token, password };
}

describe('the invitation mail', () => {
  it('carries the id and a secret token in the link and the API calls; only its hash is stored', async () => {
    const { id, token } = await adminInvitation();
    const mail = await lastMailTo(t, VICTIM);
    expect(mail.text).toContain(`http://localhost:8000/invitations/${id}/accept?token=${token}`);
    expect(mail.text).toContain(`POST /api/invitations/${id}/accept/ with {"token": "${token}"}`);
    expect(mail.text).toContain(`"invitation_token": "${token}"`);
    expect(token.length).toBeGreaterThanOrEqual(43);
    const row = await invitationRow(id);
    expect(row.tokenHash).toBe(sha256Hex(token));
    expect(JSON.stringify(row)).not.toContain(token);
  });

  it('gives every invitation its own token, never shown by the API', async () => {
    const { alice, workspace, id, token } = await adminInvitation();
    const other = await t.post(`/api/workspaces/${workspace.id}/invitations/`, { email: 'x@example.com' }, alice);
    expect(tokenIn(await lastMailTo(t, 'x@example.com'))).not.toBe(token);
    const list = await t.get(`/api/workspaces/${workspace.id}/invitations/`, alice);
    expect(JSON.stringify([other.json(), list.json()])).not.toContain(token);
    expect(list.body).not.toMatch(/token/i);
    expect(id).toEqual(expect.any(String));
  });
});

describe('takeover by changing one’s own email (the reported attack)', () => {
  async function attacker() {
    const mallory = await newUser(t, { name: 'Mallory' });
    const b = await newWorkspace(t, await newUser(t), 'B');
    await addMember(t, b, mallory, 'member');
    return mallory;
  }

  it('PATCH /auth/users/me/ cannot set the victim address, so accept stays 404 and the list empty', async () => {
    const { workspace, id } = await adminInvitation();
    const mallory = await attacker();
    const patch = await t.patch('/auth/users/me/', { email: VICTIM }, mallory);
    expect(patch.statusCode).toBe(400);
    expect(patch.json().code).toBe('email_change_requires_confirmation');
    expect((await userRow(mallory.id)).email).toBe(mallory.email);
    expect((await accept(id, mallory)).statusCode).toBe(404);
    expect(await listMine(mallory)).toMatchObject({ count: 0, results: [] });
    expect(await membershipsOf(workspace.id, mallory.id)).toEqual([]);
    expect((await invitationRow(id)).status).toBe('pending');
  });

  it('set_email/ to the victim address changes nothing until confirmed from the victim mailbox', async () => {
    const { workspace, id } = await adminInvitation();
    const mallory = await attacker();
    expect((await t.post('/auth/users/set_email/', { current_password: mallory.password, new_email: VICTIM }, mallory)).statusCode).toBe(204);
    expect(await userRow(mallory.id)).toMatchObject({ email: mallory.email });
    expect((await accept(id, mallory)).statusCode).toBe(404);
    expect((await decline(id, mallory)).statusCode).toBe(404);
    expect((await listMine(mallory)).count).toBe(0);
    expect(await membershipsOf(workspace.id, mallory.id)).toEqual([]);
    expect((await invitationRow(id)).status).toBe('pending');
  });

  it("someone else's token is 403 invitation_email_mismatch for accept and decline, and changes nothing", async () => {
    const { workspace, id, token } = await adminInvitation();
    const mallory = await attacker();
    const before = await userRow(mallory.id);
    for (const answer of [accept, decline]) {
      const res = await answer(id, mallory, { token });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ detail: expect.any(String), code: 'invitation_email_mismatch' });
    }
    expect(await membershipsOf(workspace.id, mallory.id)).toEqual([]);
    expect((await invitationRow(id)).status).toBe('pending');
    expect(await userRow(mallory.id)).toEqual(before);
  });
});

describe('takeover by registering the victim address', () => {
  it('gives an unverified account that can neither list, accept nor decline without the token', async () => {
    const { workspace, id } = await adminInvitation();
    const reg = await t.post('/auth/users/', { email: VICTIM, password: 'mallory-password' });
    expect(reg.statusCode).toBe(201);
    const squatter = await loginAs(t, VICTIM, 'mallory-password');
    expect((await t.get('/auth/users/me/', squatter)).json().email_verified).toBe(false);

    expect(await listMine(squatter)).toEqual({ count: 0, next: null, previous: null, results: [] });
    for (const answer of [accept, decline]) {
      for (const body of [undefined, {}]) {
        const res = await answer(id, squatter, body);
        expect(res.statusCode).toBe(403);
        expect(res.json()).toEqual({ detail: expect.any(String), code: 'email_not_verified' });
      }
    }
    // A guessed token is no invitation at all.
    expect((await accept(id, squatter, { token: randomToken() })).statusCode).toBe(404);
    expect(await membershipsOf(workspace.id, reg.json().id)).toEqual([]);
    expect((await invitationRow(id)).status).toBe('pending');
    expect((await userRow(reg.json().id)).emailVerifiedAt).toBeNull();
  });

  it('is not possible with sign-up closed, and PATCH still cannot take the address', async () => {
    const { id } = await adminInvitation(closed);
    expect((await closed.post('/auth/users/', { email: VICTIM, password: 'mallory-password' })).statusCode).toBe(403);
    const mallory = await newUser(closed);
    expect((await closed.patch('/auth/users/me/', { email: VICTIM }, mallory)).json().code).toBe(
      'email_change_requires_confirmation',
    );
    expect((await accept(id, mallory, undefined, closed)).statusCode).toBe(404);
  });
});

describe('answering with the token', () => {
  it('accepts for an unverified account with the address, and verifies it', async () => {
    const { workspace, id, token } = await adminInvitation();
    const victim = await newUser(t, { email: VICTIM, verified: false });
    const res = await accept(id, victim, { token });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id, status: 'accepted', role: 'admin' });
    expect(await membershipsOf(workspace.id, victim.id)).toEqual([expect.objectContaining({ role: 'admin' })]);
    expect((await userRow(victim.id)).emailVerifiedAt).toBeInstanceOf(Date);
    expect((await t.get('/auth/users/me/', victim)).json().email_verified).toBe(true);
  });

  it('declines with the token, and verifies the address too', async () => {
    const { workspace, id, token } = await adminInvitation();
    const victim = await newUser(t, { email: VICTIM, verified: false });
    const res = await decline(id, victim, { token });
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('declined');
    expect(await membershipsOf(workspace.id, victim.id)).toEqual([]);
    expect((await userRow(victim.id)).emailVerifiedAt).toBeInstanceOf(Date);
  });

  it('is single-use: the token cannot accept twice nor decline afterwards (409)', async () => {
    const { workspace, id, token } = await adminInvitation();
    const victim = await newUser(t, { email: VICTIM, verified: false });
    expect((await accept(id, victim, { token })).statusCode).toBe(200);
    const again = await accept(id, victim, { token });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('invitation_not_pending');
    expect((await decline(id, victim, { token })).json().code).toBe('invitation_not_pending');
    expect(await membershipsOf(workspace.id, victim.id)).toHaveLength(1);
  });

  it('answers 410 invitation_expired past the expiry, verifying nothing', async () => {
    const { workspace, id, token } = await adminInvitation();
    const victim = await newUser(t, { email: VICTIM, verified: false });
    await db().update(invitations).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(invitations.id, id));
    const res = await accept(id, victim, { token });
    expect(res.statusCode).toBe(410);
    expect(res.json().code).toBe('invitation_expired');
    expect(await membershipsOf(workspace.id, victim.id)).toEqual([]);
    expect((await userRow(victim.id)).emailVerifiedAt).toBeNull();
  });

  it("answers 404 for a token that is not this invitation's, even to the invitee", async () => {
    const first = await adminInvitation();
    const otherWs = await newWorkspace(t, first.alice, 'Second');
    await t.post(`/api/workspaces/${otherWs.id}/invitations/`, { email: VICTIM }, first.alice);
    const secondToken = tokenIn(await lastMailTo(t, VICTIM));
    const victim = await newUser(t, { email: VICTIM });
    for (const token of [secondToken, 'not-the-token']) {
      const res = await accept(first.id, victim, { token });
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('not_found');
    }
    expect((await invitationRow(first.id)).status).toBe('pending');
    expect(await membershipsOf(first.workspace.id, victim.id)).toEqual([]);
  });

  it('rejects a malformed body with 400', async () => {
    const { id } = await adminInvitation();
    const victim = await newUser(t, { email: VICTIM });
    const res = await accept(id, victim, { token: 'x'.repeat(129) });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.token).toBeDefined();
  });
});

describe('answering without a token', () => {
  it('works for a verified account with the address, with no body or an empty one', async () => {
    const { workspace, id } = await adminInvitation();
    const victim = await newUser(t, { email: VICTIM });
    expect((await listMine(victim)).results.map((r: { id: string }) => r.id)).toEqual([id]);
    expect((await accept(id, victim)).statusCode).toBe(200);
    expect(await membershipsOf(workspace.id, victim.id)).toHaveLength(1);
  });

  it('is 403 email_not_verified for an unverified account with the address, until it is activated', async () => {
    const { workspace, id } = await adminInvitation();
    const victim = await newUser(t, { email: VICTIM, verified: false });
    expect((await accept(id, victim, {})).json().code).toBe('email_not_verified');
    expect((await listMine(victim)).count).toBe(0);
    await t.post('/auth/users/resend_activation/', { email: VICTIM });
    const token = tokenIn(await lastMailTo(t, VICTIM));
    expect((await t.post('/auth/users/activation/', { uid: victim.id, token })).statusCode).toBe(204);
    expect((await listMine(victim)).count).toBe(1);
    expect((await accept(id, victim, {})).statusCode).toBe(200);
    expect(await membershipsOf(workspace.id, victim.id)).toHaveLength(1);
  });

  it('keeps invitations made before tokens existed for verified matching accounts only', async () => {
    const owner = await newUser(t);
    const workspace = await newWorkspace(t, owner);
    const legacy = await newInvitation(t, { workspace, email: VICTIM, invitedBy: owner });
    const unverified = await newUser(t, { email: VICTIM, verified: false });
    expect((await accept(legacy, unverified)).json().code).toBe('email_not_verified');
    // No token matches an invitation that has none.
    expect((await accept(legacy, unverified, { token: 'anything' })).statusCode).toBe(404);
    await db().update(users).set({ emailVerifiedAt: new Date() }).where(eq(users.id, unverified.id));
    expect((await accept(legacy, unverified)).statusCode).toBe(200);
    expect(await membershipsOf(workspace.id, unverified.id)).toHaveLength(1);
  });
});

describe('registering through an invitation link', () => {
  it('creates a verified account (no activation mail) that can list and accept without the token', async () => {
    const { workspace, id, token } = await adminInvitation();
    const res = await t.post('/auth/users/', {
      email: 'Victim@Example.com',
      password: 'victims-password',
      name: 'Victim',
      invitation_token: token,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ id: expect.any(Number), email: VICTIM, name: 'Victim' });
    expect((await userRow(res.json().id)).emailVerifiedAt).toBeInstanceOf(Date);
    expect((await mailsTo(t, VICTIM)).map((m) => m.subject)).toEqual(['Alice invited you to join A']);

    const victim = await loginAs(t, VICTIM, 'victims-password');
    expect((await t.get('/auth/users/me/', victim)).json().email_verified).toBe(true);
    expect((await listMine(victim)).count).toBe(1);
    expect((await accept(id, victim)).statusCode).toBe(200);
    expect(await membershipsOf(workspace.id, victim.id)).toEqual([expect.objectContaining({ role: 'admin' })]);
  });

  it('refuses a token for another address, an unknown one and one of an answered invitation (400), creating nobody', async () => {
    const { id, token } = await adminInvitation();
    const attempts = [
      { email: 'mallory@example.com', invitation_token: token },
      { email: VICTIM, invitation_token: 'not-a-token' },
    ];
    for (const body of attempts) {
      const res = await t.post('/auth/users/', { ...body, password: 'some-password' });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_invitation_token', errors: { invitation_token: [expect.any(String)] } });
    }
    await db().update(invitations).set({ status: 'revoked' }).where(eq(invitations.id, id));
    const revoked = await t.post('/auth/users/', { email: VICTIM, password: 'some-password', invitation_token: token });
    expect(revoked.json().code).toBe('invalid_invitation_token');
    expect(await db().select().from(users).where(eq(users.email, 'mallory@example.com'))).toEqual([]);
    expect(await db().select().from(users).where(eq(users.email, VICTIM))).toEqual([]);
  });

  it('refuses the token of an expired invitation', async () => {
    const { id, token } = await adminInvitation();
    await db().update(invitations).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(invitations.id, id));
    const res = await t.post('/auth/users/', { email: VICTIM, password: 'some-password', invitation_token: token });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_invitation_token');
  });

  it('works when sign-up is closed: the invitation is the way in', async () => {
    const { workspace, id, token } = await adminInvitation(closed);
    const res = await closed.post('/auth/users/', { email: VICTIM, password: 'victims-password', invitation_token: token });
    expect(res.statusCode).toBe(201);
    const victim = await loginAs(closed, VICTIM, 'victims-password');
    expect((await accept(id, victim, { token }, closed)).statusCode).toBe(200);
    expect(await membershipsOf(workspace.id, victim.id, closed)).toHaveLength(1);
  });
});
