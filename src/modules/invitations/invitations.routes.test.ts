import { asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { forgetCachedAccess, useTestApp, type TestApp } from '../../../test/support/app.js';
import {
  addMember,
  addTeamMember,
  newInvitation,
  newTeam,
  newUser,
  newWorkspace,
} from '../../../test/support/factories.js';
import { mailOutbox } from '../../platform/mail/mail.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { invitations } from './invitations.table.js';

const t = useTestApp();

async function setup(app: TestApp = t) {
  const [owner, admin, member, outsider] = await Promise.all([newUser(app), newUser(app), newUser(app), newUser(app)]);
  const workspace = await newWorkspace(app, owner, 'Acme Research');
  const otherWorkspace = await newWorkspace(app, outsider, 'Elsewhere');
  await addMember(app, workspace, admin, 'admin');
  await addMember(app, workspace, member, 'member');
  return { owner, admin, member, outsider, workspace, otherWorkspace };
}

const db = () => t.deps.database.db;
const invitationRows = () => db().select().from(invitations).orderBy(asc(invitations.createdAt));
const mails = () => db().select().from(mailOutbox).orderBy(asc(mailOutbox.createdAt));
const archive = async (workspaceId: string) => {
  await db().update(workspaces).set({ status: 'archived' }).where(eq(workspaces.id, workspaceId));
  forgetCachedAccess(t);
};
const expire = (id: string) =>
  db().update(invitations).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(invitations.id, id));

describe('POST /api/workspaces/{id}/invitations/', () => {
  it('creates a pending invitation with a lower-cased email and mails the accept link', async () => {
    const { owner, workspace } = await setup();
    const before = Date.now();
    const res = await t.post(
      `/api/workspaces/${workspace.id}/invitations/`,
      { email: 'New.Person@Example.COM', role: 'admin' },
      owner,
    );
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      id: expect.any(String),
      workspace: workspace.id,
      team: null,
      email: 'new.person@example.com',
      role: 'admin',
      status: 'pending',
      expires_at: expect.any(String),
      created_at: expect.any(String),
      workspace_name: 'Acme Research',
      team_name: null,
      invited_by: { id: owner.id, email: owner.email, name: owner.name },
    });
    // Lifetime: INVITATION_TTL_SECONDS, seven days by default.
    const ttl = new Date(body.expires_at).getTime() - before;
    expect(ttl).toBeGreaterThanOrEqual(604_800_000);
    expect(ttl).toBeLessThan(604_800_000 + 60_000);

    const [row] = await invitationRows();
    expect(row).toMatchObject({ id: body.id, email: 'new.person@example.com', status: 'pending', invitedBy: owner.id });

    const [mail] = await mails();
    expect(mail!.to).toBe('new.person@example.com');
    expect(mail!.subject).toBe(`${owner.name} invited you to join Acme Research`);
    expect(mail!.text).toContain(`http://localhost:8000/invitations/${body.id}/accept`);
    expect(mail!.text).toContain(`POST /api/invitations/${body.id}/accept/`);
    expect(mail!.text).toContain(owner.email);
    expect(mail!.text).toContain('as admin');
  });

  it('lets an admin invite; the role defaults to member', async () => {
    const { admin, workspace } = await setup();
    const res = await t.post(`/api/workspaces/${workspace.id}/invitations/`, { email: 'x@example.com' }, admin);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ role: 'member', invited_by: { id: admin.id } });
  });

  it('refuses members and outsiders (403) and anonymous callers (403), with no row and no mail', async () => {
    const { member, outsider, workspace } = await setup();
    const body = { email: 'x@example.com', role: 'member' };
    const asMember = await t.post(`/api/workspaces/${workspace.id}/invitations/`, body, member);
    expect(asMember.statusCode).toBe(403);
    expect(asMember.json().code).toBe('permission_denied');
    const asOutsider = await t.post(`/api/workspaces/${workspace.id}/invitations/`, body, outsider);
    expect(asOutsider.statusCode).toBe(403);
    expect(asOutsider.json().code).toBe('not_workspace_member');
    expect((await t.post(`/api/workspaces/${workspace.id}/invitations/`, body, null)).statusCode).toBe(403);
    expect((await t.post('/api/workspaces/not-a-uuid/invitations/', body, member)).statusCode).toBe(403);
    expect(await invitationRows()).toEqual([]);
    expect(await mails()).toEqual([]);
  });

  it('refuses someone who is already a member with 400 already_member, whatever the case of the email', async () => {
    const { owner, member, workspace } = await setup();
    const res = await t.post(
      `/api/workspaces/${workspace.id}/invitations/`,
      { email: member.email.toUpperCase(), role: 'member' },
      owner,
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      detail: expect.any(String),
      code: 'already_member',
      errors: { email: [expect.any(String)] },
    });
    const self = await t.post(`/api/workspaces/${workspace.id}/invitations/`, { email: owner.email }, owner);
    expect(self.json().code).toBe('already_member');
    expect(await invitationRows()).toEqual([]);
    expect(await mails()).toEqual([]);
  });

  it('invites a person with an account who is not a member yet', async () => {
    const { owner, outsider, workspace } = await setup();
    const res = await t.post(`/api/workspaces/${workspace.id}/invitations/`, { email: outsider.email }, owner);
    expect(res.statusCode).toBe(201);
  });

  it('refuses a second pending invitation for the same email with 409 invitation_pending', async () => {
    const { owner, admin, workspace, otherWorkspace, outsider } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    expect((await t.post(url, { email: 'dup@example.com' }, owner)).statusCode).toBe(201);
    const again = await t.post(url, { email: 'DUP@example.com', role: 'admin' }, admin);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ detail: expect.any(String), code: 'invitation_pending' });
    expect(await invitationRows()).toHaveLength(1);
    expect(await mails()).toHaveLength(1);
    // Another workspace may invite the same person.
    const elsewhereUrl = `/api/workspaces/${otherWorkspace.id}/invitations/`;
    const elsewhere = await t.post(elsewhereUrl, { email: 'dup@example.com' }, outsider);
    expect(elsewhere.statusCode).toBe(201);
  });

  it('decides concurrent duplicate invitations with the unique index: one 201, one 409', async () => {
    const { owner, admin, workspace } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    const results = await Promise.all([
      t.post(url, { email: 'race@example.com' }, owner),
      t.post(url, { email: 'race@example.com' }, admin),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    expect(await invitationRows()).toHaveLength(1);
  });

  it('allows a new invitation once the previous one is revoked, declined or expired', async () => {
    const { owner, workspace } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    const first = (await t.post(url, { email: 'again@example.com' }, owner)).json();
    expect((await t.delete(`${url}${first.id}/`, owner)).statusCode).toBe(204);
    const second = (await t.post(url, { email: 'again@example.com' }, owner)).json();
    expect(second.status).toBe('pending');
    await expire(second.id);
    const third = await t.post(url, { email: 'again@example.com' }, owner);
    expect(third.statusCode).toBe(201);
    const rows = await invitationRows();
    expect(rows.map((r) => r.status)).toEqual(['revoked', 'expired', 'pending']);
  });

  it.each([
    ['a malformed email', { email: 'not-an-email', role: 'member' }, 'email'],
    ['a missing email', { role: 'member' }, 'email'],
    ['an unknown role', { email: 'ok@example.com', role: 'owner' }, 'role'],
    ['an over-long email', { email: `${'a'.repeat(250)}@example.com` }, 'email'],
  ])('rejects %s with a JSON 400 and stores nothing', async (_label, body, field) => {
    const { owner, workspace } = await setup();
    const res = await t.post(`/api/workspaces/${workspace.id}/invitations/`, body, owner);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_error');
    expect(res.json().errors[field]).toBeDefined();
    expect(await invitationRows()).toEqual([]);
    expect(await mails()).toEqual([]);
  });

  it('answers 409 workspace_archived while the workspace is archived', async () => {
    const { owner, workspace } = await setup();
    await archive(workspace.id);
    const res = await t.post(`/api/workspaces/${workspace.id}/invitations/`, { email: 'x@example.com' }, owner);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('workspace_archived');
    expect(await invitationRows()).toEqual([]);
  });
});

describe('invitation lifetime', () => {
  const short = useTestApp({ INVITATION_TTL_SECONDS: '60' });

  it('comes from INVITATION_TTL_SECONDS', async () => {
    const { owner, workspace } = await setup(short);
    const before = Date.now();
    const res = await short.post(`/api/workspaces/${workspace.id}/invitations/`, { email: 'ttl@example.com' }, owner);
    const ttl = new Date(res.json().expires_at).getTime() - before;
    expect(ttl).toBeGreaterThanOrEqual(60_000);
    expect(ttl).toBeLessThan(70_000);
  });
});

describe('GET /api/workspaces/{id}/invitations/', () => {
  it('lists the workspace invitations newest first, paginated, for the owner and admins only', async () => {
    const { owner, admin, member, outsider, workspace } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    const ids: string[] = [];
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) {
      ids.push((await t.post(url, { email }, owner)).json().id);
    }
    // Team invitations are listed under their team, not here.
    const team = await newTeam(t, workspace, 'Core');
    await newInvitation(t, { workspace, team, email: member.email });

    const res = await t.request('GET', url, { as: admin, query: { limit: '2' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().count).toBe(3);
    expect(res.json().results.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    expect(res.json().next).toContain('offset=2');
    const rest = await t.request('GET', url, { as: owner, query: { limit: '2', offset: '2' } });
    expect(rest.json().results.map((r: { id: string }) => r.id)).toEqual([ids[0]]);

    expect((await t.get(url, member)).statusCode).toBe(403);
    expect((await t.get(url, outsider)).statusCode).toBe(403);
  });

  it('filters by ?status=, reporting stale pending invitations as expired', async () => {
    const { owner, workspace } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    const live = (await t.post(url, { email: 'live@example.com' }, owner)).json().id;
    const stale = (await t.post(url, { email: 'stale@example.com' }, owner)).json().id;
    const revoked = (await t.post(url, { email: 'gone@example.com' }, owner)).json().id;
    await t.delete(`${url}${revoked}/`, owner);
    await expire(stale);

    const byStatus = async (status: string) =>
      (await t.request('GET', url, { as: owner, query: { status } })).json().results.map((r: { id: string }) => r.id);
    expect(await byStatus('pending')).toEqual([live]);
    expect(await byStatus('expired')).toEqual([stale]);
    expect(await byStatus('revoked')).toEqual([revoked]);
    expect(await byStatus('accepted')).toEqual([]);
    const all = (await t.get(url, owner)).json().results;
    expect(all.find((r: { id: string }) => r.id === stale).status).toBe('expired');
    // Reporting does not rewrite the row.
    const [row] = await db().select().from(invitations).where(eq(invitations.id, stale));
    expect(row!.status).toBe('pending');

    const bad = await t.request('GET', url, { as: owner, query: { status: 'lost' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.status).toBeDefined();
  });

  it('still works while the workspace is archived', async () => {
    const { owner, workspace } = await setup();
    await newInvitation(t, { workspace, email: 'x@example.com' });
    await archive(workspace.id);
    const res = await t.get(`/api/workspaces/${workspace.id}/invitations/`, owner);
    expect(res.statusCode).toBe(200);
    expect(res.json().count).toBe(1);
  });
});

describe('DELETE /api/workspaces/{id}/invitations/{invitation}/', () => {
  it('revokes a pending invitation: 204, status revoked, and the invitee can no longer see or accept it', async () => {
    const { owner, admin, outsider, workspace } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    const id = (await t.post(url, { email: outsider.email }, owner)).json().id;
    const res = await t.delete(`${url}${id}/`, admin);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    const [row] = await invitationRows();
    expect(row!.status).toBe('revoked');
    expect((await t.get('/api/invitations/', outsider)).json().count).toBe(0);
    const accept = await t.post(`/api/invitations/${id}/accept/`, {}, outsider);
    expect(accept.statusCode).toBe(409);
    expect(accept.json().code).toBe('invitation_not_pending');
  });

  it('answers 409 invitation_not_pending for an invitation that is not pending', async () => {
    const { owner, outsider, workspace } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    const id = (await t.post(url, { email: outsider.email }, owner)).json().id;
    expect((await t.post(`/api/invitations/${id}/accept/`, {}, outsider)).statusCode).toBe(200);
    const res = await t.delete(`${url}${id}/`, owner);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('invitation_not_pending');
    const expiresAt = new Date(Date.now() - 1000);
    const stale = await newInvitation(t, { workspace, email: 'old@example.com', expiresAt });
    expect((await t.delete(`${url}${stale}/`, owner)).json().code).toBe('invitation_not_pending');
    expect((await invitationRows()).map((r) => r.status)).toEqual(['accepted', 'pending']);
  });

  it('refuses members and outsiders (403) and hides invitations of other workspaces and teams (404)', async () => {
    const { owner, member, outsider, workspace, otherWorkspace } = await setup();
    const url = `/api/workspaces/${workspace.id}/invitations/`;
    const id = await newInvitation(t, { workspace, email: 'x@example.com' });
    expect((await t.delete(`${url}${id}/`, member)).statusCode).toBe(403);
    expect((await t.delete(`${url}${id}/`, outsider)).statusCode).toBe(403);

    const foreign = await newInvitation(t, { workspace: otherWorkspace, email: 'y@example.com' });
    expect((await t.delete(`${url}${foreign}/`, owner)).statusCode).toBe(404);
    const team = await newTeam(t, workspace, 'Core');
    const teamInvitation = await newInvitation(t, { workspace, team, email: member.email });
    expect((await t.delete(`${url}${teamInvitation}/`, owner)).statusCode).toBe(404);
    expect((await t.delete(`${url}00000000-0000-4000-8000-000000000000/`, owner)).statusCode).toBe(404);
    expect((await t.delete(`${url}nope/`, owner)).statusCode).toBe(404);
    expect((await invitationRows()).every((r) => r.status === 'pending')).toBe(true);
  });

  it('answers 409 workspace_archived while the workspace is archived', async () => {
    const { owner, workspace } = await setup();
    const id = await newInvitation(t, { workspace, email: 'x@example.com' });
    await archive(workspace.id);
    const res = await t.delete(`/api/workspaces/${workspace.id}/invitations/${id}/`, owner);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('workspace_archived');
    expect((await invitationRows())[0]!.status).toBe('pending');
  });
});

describe('team invitations', () => {
  async function teamSetup() {
    const base = await setup();
    const [teamAdmin, teamMember] = await Promise.all([newUser(t), newUser(t)]);
    await addMember(t, base.workspace, teamAdmin, 'member');
    await addMember(t, base.workspace, teamMember, 'member');
    const team = await newTeam(t, base.workspace, 'Core');
    await addTeamMember(t, team, teamAdmin, 'admin');
    await addTeamMember(t, team, teamMember, 'member');
    return { ...base, teamAdmin, teamMember, team, url: `/api/teams/${team.id}/invitations/` };
  }

  it('lets a team admin invite a workspace member, with the team named in the mail', async () => {
    const { teamAdmin, member, workspace, team, url } = await teamSetup();
    const res = await t.post(url, { email: member.email, role: 'admin' }, teamAdmin);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      workspace: workspace.id,
      team: team.id,
      email: member.email,
      role: 'admin',
      status: 'pending',
      workspace_name: 'Acme Research',
      team_name: 'Core',
      invited_by: { id: teamAdmin.id },
    });
    const [mail] = await mails();
    expect(mail!.to).toBe(member.email);
    expect(mail!.subject).toBe(`${teamAdmin.name} invited you to the team Core in Acme Research`);
    expect(mail!.text).toContain(`http://localhost:8000/invitations/${res.json().id}/accept`);
  });

  it('lets the workspace owner and admins invite too', async () => {
    const { owner, admin, member, url } = await teamSetup();
    expect((await t.post(url, { email: member.email }, owner)).statusCode).toBe(201);
    expect((await t.post(url, { email: owner.email }, admin)).statusCode).toBe(201);
  });

  it('refuses plain team members and workspace members (403) and outsiders (404)', async () => {
    const { teamMember, member, outsider, admin, url } = await teamSetup();
    const asTeamMember = await t.post(url, { email: member.email }, teamMember);
    expect(asTeamMember.statusCode).toBe(403);
    expect(asTeamMember.json().code).toBe('permission_denied');
    expect((await t.post(url, { email: admin.email }, member)).statusCode).toBe(403);
    expect((await t.post(url, { email: member.email }, outsider)).statusCode).toBe(404);
    const unknownTeam = '/api/teams/00000000-0000-4000-8000-000000000000/invitations/';
    expect((await t.post(unknownTeam, { email: member.email }, admin)).statusCode).toBe(404);
    expect(await invitationRows()).toEqual([]);
  });

  it('refuses an invitee who is not a member of the workspace with 400 invitee_not_workspace_member', async () => {
    const { owner, outsider, url } = await teamSetup();
    for (const email of [outsider.email, 'no-account@example.com']) {
      const res = await t.post(url, { email }, owner);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'invitee_not_workspace_member',
        errors: { email: [expect.any(String)] },
      });
    }
    expect(await invitationRows()).toEqual([]);
    expect(await mails()).toEqual([]);
  });

  it('refuses a team member with 400 already_member and a duplicate with 409 invitation_pending', async () => {
    const { owner, teamAdmin, teamMember, member, workspace, url } = await teamSetup();
    const already = await t.post(url, { email: teamMember.email }, owner);
    expect(already.statusCode).toBe(400);
    expect(already.json().code).toBe('already_member');
    expect((await t.post(url, { email: member.email }, owner)).statusCode).toBe(201);
    const dup = await t.post(url, { email: member.email }, teamAdmin);
    expect(dup.statusCode).toBe(409);
    expect(dup.json().code).toBe('invitation_pending');
    // A workspace invitation and a team invitation are different targets.
    const other = await newTeam(t, workspace, 'Other');
    expect((await t.post(`/api/teams/${other.id}/invitations/`, { email: member.email }, owner)).statusCode).toBe(201);
    expect(await invitationRows()).toHaveLength(2);
  });

  it('lists and revokes under the team, for team admins and workspace owner/admins only', async () => {
    const { owner, teamAdmin, teamMember, member, outsider, admin, workspace, url } = await teamSetup();
    const first = (await t.post(url, { email: member.email }, owner)).json().id;
    const second = (await t.post(url, { email: admin.email }, teamAdmin)).json().id;

    const list = await t.get(url, teamAdmin);
    expect(list.statusCode).toBe(200);
    expect(list.json().results.map((r: { id: string }) => r.id)).toEqual([second, first]);
    expect((await t.get(url, admin)).json().count).toBe(2);
    expect((await t.get(url, teamMember)).statusCode).toBe(403);
    expect((await t.get(url, outsider)).statusCode).toBe(404);
    expect((await t.get(`/api/workspaces/${workspace.id}/invitations/`, owner)).json().count).toBe(0);

    expect((await t.delete(`${url}${first}/`, teamMember)).statusCode).toBe(403);
    expect((await t.delete(`${url}${first}/`, outsider)).statusCode).toBe(404);
    expect((await t.delete(`${url}${first}/`, teamAdmin)).statusCode).toBe(204);
    expect((await t.delete(`${url}${first}/`, teamAdmin)).statusCode).toBe(409);
    const pending = await t.request('GET', url, { as: owner, query: { status: 'pending' } });
    expect(pending.json().results.map((r: { id: string }) => r.id)).toEqual([second]);
    // A workspace invitation is not reachable through a team path.
    const wsInvitation = await newInvitation(t, { workspace, email: 'w@example.com' });
    expect((await t.delete(`${url}${wsInvitation}/`, owner)).statusCode).toBe(404);
  });

  it('answers 409 workspace_archived to team invitations and revocations while archived', async () => {
    const { owner, member, workspace, team, url } = await teamSetup();
    const id = await newInvitation(t, { workspace, team, email: owner.email });
    await archive(workspace.id);
    const invite = await t.post(url, { email: member.email }, owner);
    expect(invite.statusCode).toBe(409);
    expect(invite.json().code).toBe('workspace_archived');
    expect((await t.delete(`${url}${id}/`, owner)).json().code).toBe('workspace_archived');
    expect((await t.get(url, owner)).statusCode).toBe(200);
    expect((await invitationRows()).map((r) => r.status)).toEqual(['pending']);
  });
});
