import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { forgetCachedAccess, useTestApp } from '../../../test/support/app.js';
import {
  addMember,
  addTeamMember,
  newInvitation,
  newTeam,
  newUser,
  newWorkspace,
  type TestUser,
} from '../../../test/support/factories.js';
import { teamMemberships } from '../teams/teams.table.js';
import { workspaceMemberships, workspaces } from '../workspaces/workspaces.table.js';
import { invitations } from './invitations.table.js';

const t = useTestApp();
const db = () => t.deps.database.db;

/** A workspace (owner + a plain member), an invitee with an account, and a bystander. */
async function setup() {
  const [owner, member, invitee, bystander] = await Promise.all([newUser(t), newUser(t), newUser(t), newUser(t)]);
  const workspace = await newWorkspace(t, owner, 'Acme');
  await addMember(t, workspace, member, 'member');
  return { owner, member, invitee, bystander, workspace };
}

/** Invites through the API, as the owner would. */
async function invite(owner: TestUser, workspaceId: string, email: string, role: 'admin' | 'member' = 'member') {
  const res = await t.post(`/api/workspaces/${workspaceId}/invitations/`, { email, role }, owner);
  expect(res.statusCode).toBe(201);
  return res.json().id as string;
}

const statusOf = async (id: string) =>
  (await db().select().from(invitations).where(eq(invitations.id, id)))[0]?.status;
const membershipsOf = (workspaceId: string, userId: number) =>
  db()
    .select()
    .from(workspaceMemberships)
    .where(and(eq(workspaceMemberships.workspaceId, workspaceId), eq(workspaceMemberships.userId, userId)));
const teamMembershipsOf = (teamId: string, userId: number) =>
  db()
    .select()
    .from(teamMemberships)
    .where(and(eq(teamMemberships.teamId, teamId), eq(teamMemberships.userId, userId)));
const expire = (id: string) =>
  db().update(invitations).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(invitations.id, id));
const setArchived = async (workspaceId: string, archived: boolean) => {
  await db()
    .update(workspaces)
    .set({ status: archived ? 'archived' : 'active' })
    .where(eq(workspaces.id, workspaceId));
  forgetCachedAccess(t);
};

describe('GET /api/invitations/', () => {
  it("lists the caller's pending, unexpired invitations, matched by email in any case, newest first", async () => {
    const { owner, invitee, bystander, workspace } = await setup();
    const other = await newWorkspace(t, bystander, 'Other');
    const first = await invite(owner, workspace.id, invitee.email.toUpperCase(), 'admin');
    const second = await invite(bystander, other.id, invitee.email);
    const otherTeam = await newTeam(t, other, 'T');
    const stale = await newInvitation(t, { workspace: other, team: otherTeam, email: invitee.email });
    await expire(stale);
    const third = await newWorkspace(t, bystander, 'Third');
    const declined = await newInvitation(t, { workspace: third, email: invitee.email });
    await db().update(invitations).set({ status: 'declined' }).where(eq(invitations.id, declined));
    await invite(owner, workspace.id, 'someone-else@example.com');

    const res = await t.get('/api/invitations/', invitee);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ count: 2, next: null, previous: null });
    expect(res.json().results).toEqual([
      expect.objectContaining({ id: second, workspace: other.id, workspace_name: 'Other', status: 'pending' }),
      expect.objectContaining({ id: first, workspace: workspace.id, role: 'admin', email: invitee.email }),
    ]);

    const paged = await t.request('GET', '/api/invitations/', { as: invitee, query: { limit: '1' } });
    expect(paged.json().results.map((r: { id: string }) => r.id)).toEqual([second]);
    expect(paged.json().next).toContain('offset=1');
    expect((await t.get('/api/invitations/', bystander)).json().count).toBe(0);
    expect((await t.get('/api/invitations/', null)).statusCode).toBe(403);
  });
});

describe('POST /api/invitations/{id}/accept/', () => {
  it('makes the invitee a member with the invited role and returns the accepted invitation', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email, 'admin');
    expect((await t.get(`/api/workspaces/${workspace.id}/`, invitee)).statusCode).toBe(403);

    const res = await t.post(`/api/invitations/${id}/accept/`, {}, invitee);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id, workspace: workspace.id, team: null, status: 'accepted', role: 'admin' });
    expect(await membershipsOf(workspace.id, invitee.id)).toEqual([expect.objectContaining({ role: 'admin' })]);
    expect((await t.get(`/api/workspaces/${workspace.id}/`, invitee)).statusCode).toBe(200);
    expect((await t.get('/api/invitations/', invitee)).json().count).toBe(0);
    const [row] = await db().select().from(invitations).where(eq(invitations.id, id));
    expect(row).toMatchObject({ status: 'accepted', respondedAt: expect.any(Date) });
  });

  it('works with a request that has no body at all', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    const res = await t.request('POST', `/api/invitations/${id}/accept/`, { as: invitee });
    expect(res.statusCode).toBe(200);
  });

  it('answers 404 to anyone but the invitee, the inviter included, and changes nothing', async () => {
    const { owner, member, invitee, bystander, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    for (const caller of [owner, member, bystander]) {
      const res = await t.post(`/api/invitations/${id}/accept/`, {}, caller);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ detail: 'Invitation not found.', code: 'not_found' });
      expect((await t.post(`/api/invitations/${id}/decline/`, {}, caller)).statusCode).toBe(404);
    }
    expect((await t.post(`/api/invitations/${id}/accept/`, {}, null)).statusCode).toBe(403);
    const unknown = '/api/invitations/00000000-0000-4000-8000-000000000000/accept/';
    expect((await t.post(unknown, {}, invitee)).statusCode).toBe(404);
    expect((await t.post('/api/invitations/bogus/accept/', {}, invitee)).statusCode).toBe(404);
    expect(await statusOf(id)).toBe('pending');
    expect(await membershipsOf(workspace.id, bystander.id)).toEqual([]);
  });

  it('is single-use: a second accept, or a decline afterwards, answers 409 invitation_not_pending', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    expect((await t.post(`/api/invitations/${id}/accept/`, {}, invitee)).statusCode).toBe(200);
    const again = await t.post(`/api/invitations/${id}/accept/`, {}, invitee);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ detail: expect.stringContaining('accepted'), code: 'invitation_not_pending' });
    expect((await t.post(`/api/invitations/${id}/decline/`, {}, invitee)).json().code).toBe('invitation_not_pending');
    expect(await membershipsOf(workspace.id, invitee.id)).toHaveLength(1);
    expect(await statusOf(id)).toBe('accepted');
  });

  it('answers 409 invitation_not_pending for declined and revoked invitations', async () => {
    const { owner, invitee, workspace } = await setup();
    const declined = await invite(owner, workspace.id, invitee.email);
    expect((await t.post(`/api/invitations/${declined}/decline/`, {}, invitee)).statusCode).toBe(200);
    const afterDecline = await t.post(`/api/invitations/${declined}/accept/`, {}, invitee);
    expect(afterDecline.json().code).toBe('invitation_not_pending');
    const revoked = await invite(owner, workspace.id, invitee.email);
    await t.delete(`/api/workspaces/${workspace.id}/invitations/${revoked}/`, owner);
    const res = await t.post(`/api/invitations/${revoked}/accept/`, {}, invitee);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('invitation_not_pending');
    expect(await membershipsOf(workspace.id, invitee.id)).toEqual([]);
  });

  it('answers 410 invitation_expired past its expiry and marks the invitation expired', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    await expire(id);
    // Reported as expired before anything marks it.
    const listed = (await t.get(`/api/workspaces/${workspace.id}/invitations/`, owner)).json().results[0];
    expect(listed.status).toBe('expired');
    expect(await statusOf(id)).toBe('pending');

    const res = await t.post(`/api/invitations/${id}/accept/`, {}, invitee);
    expect(res.statusCode).toBe(410);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'invitation_expired' });
    expect(await statusOf(id)).toBe('expired');
    expect((await t.post(`/api/invitations/${id}/accept/`, {}, invitee)).statusCode).toBe(410);
    expect((await t.post(`/api/invitations/${id}/decline/`, {}, invitee)).statusCode).toBe(410);
    expect(await membershipsOf(workspace.id, invitee.id)).toEqual([]);
  });

  it('answers 409 workspace_archived while the workspace is archived, and works once it is active again', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    await setArchived(workspace.id, true);
    const res = await t.post(`/api/invitations/${id}/accept/`, {}, invitee);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('workspace_archived');
    expect(await statusOf(id)).toBe('pending');
    expect(await membershipsOf(workspace.id, invitee.id)).toEqual([]);
    await setArchived(workspace.id, false);
    expect((await t.post(`/api/invitations/${id}/accept/`, {}, invitee)).statusCode).toBe(200);
  });

  it('creates exactly one membership when two accepts race', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    const results = await Promise.all([
      t.post(`/api/invitations/${id}/accept/`, {}, invitee),
      t.post(`/api/invitations/${id}/accept/`, {}, invitee),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.statusCode === 409)!.json().code).toBe('invitation_not_pending');
    expect(await membershipsOf(workspace.id, invitee.id)).toHaveLength(1);
    expect(await statusOf(id)).toBe('accepted');
  });

  it('lets one of an accept and a decline racing each other win, never both', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    const [accept, decline] = await Promise.all([
      t.post(`/api/invitations/${id}/accept/`, {}, invitee),
      t.post(`/api/invitations/${id}/decline/`, {}, invitee),
    ]);
    expect([accept.statusCode, decline.statusCode].sort()).toEqual([200, 409]);
    const members = await membershipsOf(workspace.id, invitee.id);
    expect(await statusOf(id)).toBe(accept.statusCode === 200 ? 'accepted' : 'declined');
    expect(members).toHaveLength(accept.statusCode === 200 ? 1 : 0);
  });

  it('leaves an existing membership and its role alone when the invitee is already a member', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email, 'admin');
    await addMember(t, workspace, invitee, 'member');
    const res = await t.post(`/api/invitations/${id}/accept/`, {}, invitee);
    expect(res.statusCode).toBe(200);
    expect(await membershipsOf(workspace.id, invitee.id)).toEqual([expect.objectContaining({ role: 'member' })]);
  });
});

describe('accepting a team invitation', () => {
  async function teamSetup() {
    const base = await setup();
    const team = await newTeam(t, base.workspace, 'Core');
    await addTeamMember(t, team, base.owner, 'admin');
    return { ...base, team };
  }

  it('adds the workspace member to the team with the invited team role', async () => {
    const { owner, member, team } = await teamSetup();
    const created = await t.post(`/api/teams/${team.id}/invitations/`, { email: member.email, role: 'admin' }, owner);
    const id = created.json().id as string;
    expect((await t.get('/api/invitations/', member)).json().results.map((r: { id: string }) => r.id)).toEqual([id]);

    const res = await t.post(`/api/invitations/${id}/accept/`, {}, member);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id, team: team.id, team_name: 'Core', status: 'accepted', role: 'admin' });
    expect(await teamMembershipsOf(team.id, member.id)).toEqual([expect.objectContaining({ role: 'admin' })]);
    const mine = await t.get('/api/teammemberships/mine/', member);
    expect(mine.json()).toEqual([expect.objectContaining({ team: team.id, role: 'admin' })]);
  });

  it('refuses with 403 not_workspace_member once the invitee has left the workspace, keeping it pending', async () => {
    const { owner, member, workspace, team } = await teamSetup();
    const id = (await t.post(`/api/teams/${team.id}/invitations/`, { email: member.email }, owner)).json().id;
    expect((await t.post(`/api/workspaces/${workspace.id}/leave/`, {}, member)).statusCode).toBe(204);
    const res = await t.post(`/api/invitations/${id}/accept/`, {}, member);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('not_workspace_member');
    expect(await teamMembershipsOf(team.id, member.id)).toEqual([]);
    expect(await statusOf(id)).toBe('pending');
  });

  it('creates one team membership when two accepts race', async () => {
    const { owner, member, team } = await teamSetup();
    const id = (await t.post(`/api/teams/${team.id}/invitations/`, { email: member.email }, owner)).json().id;
    const results = await Promise.all([
      t.post(`/api/invitations/${id}/accept/`, {}, member),
      t.post(`/api/invitations/${id}/accept/`, {}, member),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(await teamMembershipsOf(team.id, member.id)).toHaveLength(1);
  });

  it('answers 409 workspace_archived while the workspace is archived', async () => {
    const { owner, member, workspace, team } = await teamSetup();
    const id = (await t.post(`/api/teams/${team.id}/invitations/`, { email: member.email }, owner)).json().id;
    await setArchived(workspace.id, true);
    const res = await t.post(`/api/invitations/${id}/accept/`, {}, member);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('workspace_archived');
    expect(await teamMembershipsOf(team.id, member.id)).toEqual([]);
  });
});

describe('POST /api/invitations/{id}/decline/', () => {
  it('marks the invitation declined and creates no membership', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    const res = await t.post(`/api/invitations/${id}/decline/`, {}, invitee);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id, status: 'declined' });
    expect(await statusOf(id)).toBe('declined');
    expect(await membershipsOf(workspace.id, invitee.id)).toEqual([]);
    expect((await t.get('/api/invitations/', invitee)).json().count).toBe(0);
    const again = await t.post(`/api/invitations/${id}/decline/`, {}, invitee);
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('invitation_not_pending');
    // A declined invitation no longer blocks a new one.
    const reinvite = await t.post(`/api/workspaces/${workspace.id}/invitations/`, { email: invitee.email }, owner);
    expect(reinvite.statusCode).toBe(201);
  });

  it('is allowed while the workspace is archived', async () => {
    const { owner, invitee, workspace } = await setup();
    const id = await invite(owner, workspace.id, invitee.email);
    await setArchived(workspace.id, true);
    expect((await t.post(`/api/invitations/${id}/decline/`, {}, invitee)).statusCode).toBe(200);
    expect(await statusOf(id)).toBe('declined');
  });
});
