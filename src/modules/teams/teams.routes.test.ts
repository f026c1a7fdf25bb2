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
} from '../../../test/support/factories.js';
import { invitations } from '../invitations/invitations.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { teamMemberships, teams } from './teams.table.js';

const t = useTestApp();

/** A workspace with an owner, an admin and a plain member, plus an outsider with a workspace of their own. */
async function setup() {
  const [owner, admin, member, outsider] = await Promise.all([newUser(t), newUser(t), newUser(t), newUser(t)]);
  const workspace = await newWorkspace(t, owner, 'Acme');
  const otherWorkspace = await newWorkspace(t, outsider, 'Elsewhere');
  await addMember(t, workspace, admin, 'admin');
  await addMember(t, workspace, member, 'member');
  return { owner, admin, member, outsider, workspace, otherWorkspace };
}

const db = () => t.deps.database.db;
const teamRows = (workspaceId: string) => db().select().from(teams).where(eq(teams.workspaceId, workspaceId));
const archive = async (workspaceId: string) => {
  await db().update(workspaces).set({ status: 'archived' }).where(eq(workspaces.id, workspaceId));
  forgetCachedAccess(t);
};

describe('POST /api/teams/', () => {
  it('lets the workspace owner create a team and makes the creator its admin member', async () => {
    const { owner, workspace } = await setup();
    const body = { workspace: workspace.id, name: '  Research ', description: 'R&D' };
    const res = await t.post('/api/teams/', body, owner);
    expect(res.statusCode).toBe(201);
    const team = res.json();
    expect(team).toEqual({
      id: expect.any(String),
      workspace: workspace.id,
      name: 'Research',
      description: 'R&D',
      created_at: expect.any(String),
    });
    const members = await db().select().from(teamMemberships).where(eq(teamMemberships.teamId, team.id));
    expect(members).toEqual([expect.objectContaining({ userId: owner.id, role: 'admin' })]);
  });

  it('lets a workspace admin create a team; description defaults to empty', async () => {
    const { admin, workspace } = await setup();
    const res = await t.post('/api/teams/', { workspace: workspace.id, name: 'Ops' }, admin);
    expect(res.statusCode).toBe(201);
    expect(res.json().description).toBe('');
    const [membership] = await db().select().from(teamMemberships).where(eq(teamMemberships.teamId, res.json().id));
    expect(membership).toMatchObject({ userId: admin.id, role: 'admin' });
  });

  it('refuses plain members (403), outsiders (403) and anonymous callers (403) and creates nothing', async () => {
    const { member, outsider, workspace } = await setup();
    const body = { workspace: workspace.id, name: 'Nope' };
    const asMember = await t.post('/api/teams/', body, member);
    expect(asMember.statusCode).toBe(403);
    expect(asMember.json().code).toBe('permission_denied');
    const asOutsider = await t.post('/api/teams/', body, outsider);
    expect(asOutsider.statusCode).toBe(403);
    expect(asOutsider.json().code).toBe('not_workspace_member');
    const anonymous = await t.post('/api/teams/', body, null);
    expect(anonymous.statusCode).toBe(403);
    expect(anonymous.json().code).toBe('not_authenticated');
    expect(await teamRows(workspace.id)).toEqual([]);
  });

  it('answers 403 for a workspace that does not exist', async () => {
    const { owner } = await setup();
    const res = await t.post('/api/teams/', { workspace: '00000000-0000-4000-8000-000000000000', name: 'X' }, owner);
    expect(res.statusCode).toBe(403);
  });

  it('refuses a duplicate name in the same workspace with a field error, but allows it elsewhere', async () => {
    const { owner, outsider, workspace, otherWorkspace } = await setup();
    expect((await t.post('/api/teams/', { workspace: workspace.id, name: 'Core' }, owner)).statusCode).toBe(201);
    const dup = await t.post('/api/teams/', { workspace: workspace.id, name: 'Core' }, owner);
    expect(dup.statusCode).toBe(400);
    expect(dup.json()).toEqual({
      detail: expect.any(String),
      code: 'team_name_taken',
      errors: { name: [expect.any(String)] },
    });
    expect(await teamRows(workspace.id)).toHaveLength(1);
    const elsewhere = await t.post('/api/teams/', { workspace: otherWorkspace.id, name: 'Core' }, outsider);
    expect(elsewhere.statusCode).toBe(201);
  });

  it.each([
    ['a missing name', { name: undefined }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, 'name'],
    ['a description over 2000 characters', { description: 'x'.repeat(2001) }, 'description'],
    ['a workspace that is not a UUID', { workspace: 'not-a-uuid' }, 'workspace'],
  ])('rejects %s with a JSON 400 and creates nothing', async (_label, override, field) => {
    const { owner, workspace } = await setup();
    const res = await t.post('/api/teams/', { workspace: workspace.id, name: 'Valid', ...override }, owner);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_error');
    expect(res.json().errors[field]).toBeDefined();
    expect(await teamRows(workspace.id)).toEqual([]);
  });

  it('answers 409 workspace_archived in an archived workspace', async () => {
    const { owner, workspace } = await setup();
    await archive(workspace.id);
    const res = await t.post('/api/teams/', { workspace: workspace.id, name: 'Late' }, owner);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('workspace_archived');
    expect(await teamRows(workspace.id)).toEqual([]);
  });
});

describe('GET /api/teams/', () => {
  it("lists the teams of every workspace the caller belongs to, oldest first, and nobody else's", async () => {
    const { owner, member, outsider, workspace, otherWorkspace } = await setup();
    const second = await newWorkspace(t, member, 'Member-owned');
    const a = await newTeam(t, workspace, 'A');
    const b = await newTeam(t, workspace, 'B');
    const c = await newTeam(t, second, 'C');
    await newTeam(t, otherWorkspace, 'Foreign');

    const res = await t.get('/api/teams/', member);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      count: 3,
      next: null,
      previous: null,
      results: [a, b, c].map((team) => ({
        id: team.id,
        workspace: team.workspaceId,
        name: team.name,
        description: '',
        created_at: expect.any(String),
      })),
    });
    const ownerView = await t.get('/api/teams/', owner);
    expect(ownerView.json().results.map((r: { name: string }) => r.name)).toEqual(['A', 'B']);
    const outsiderView = await t.get('/api/teams/', outsider);
    expect(outsiderView.json().results.map((r: { name: string }) => r.name)).toEqual(['Foreign']);
  });

  it('filters by ?workspace= and pages with limit and offset', async () => {
    const { member, workspace, otherWorkspace } = await setup();
    const second = await newWorkspace(t, member, 'Member-owned');
    for (const name of ['A', 'B', 'C']) await newTeam(t, workspace, name);
    await newTeam(t, second, 'D');

    const first = await t.request('GET', '/api/teams/', { as: member, query: { workspace: workspace.id, limit: '2' } });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ count: 3, previous: null });
    expect(first.json().results.map((r: { name: string }) => r.name)).toEqual(['A', 'B']);
    const next = new URL(first.json().next as string);
    expect(next.searchParams.get('offset')).toBe('2');
    expect(next.searchParams.get('workspace')).toBe(workspace.id);
    const page2 = await t.get(`${next.pathname}${next.search}`, member);
    expect(page2.json()).toMatchObject({ count: 3, next: null });
    expect(page2.json().results.map((r: { name: string }) => r.name)).toEqual(['C']);
    expect(page2.json().previous).toContain('limit=2');

    // A workspace the caller is not in filters down to nothing rather than revealing its teams.
    const foreign = await t.request('GET', '/api/teams/', { as: member, query: { workspace: otherWorkspace.id } });
    expect(foreign.json()).toEqual({ count: 0, next: null, previous: null, results: [] });
  });

  it('rejects a malformed filter or page size with 400', async () => {
    const { member } = await setup();
    const bad = await t.request('GET', '/api/teams/', { as: member, query: { workspace: 'nope' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.workspace).toBeDefined();
    const big = await t.request('GET', '/api/teams/', { as: member, query: { limit: '201' } });
    expect(big.statusCode).toBe(400);
  });
});

describe('GET /api/teams/{id}/', () => {
  it('shows the team to any workspace member and hides it (404) from everyone else', async () => {
    const { member, outsider, workspace } = await setup();
    const team = await newTeam(t, workspace, 'Visible');
    const res = await t.get(`/api/teams/${team.id}/`, member);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: team.id, workspace: workspace.id, name: 'Visible' });
    const hidden = await t.get(`/api/teams/${team.id}/`, outsider);
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json()).toEqual({ detail: 'Team not found.', code: 'not_found' });
    expect((await t.get('/api/teams/00000000-0000-4000-8000-000000000000/', member)).statusCode).toBe(404);
    expect((await t.get('/api/teams/not-a-uuid/', member)).statusCode).toBe(404);
    expect((await t.get(`/api/teams/${team.id}/`, null)).statusCode).toBe(403);
  });
});

describe('PUT and PATCH /api/teams/{id}/', () => {
  it('lets the owner, a workspace admin and a team admin update the team', async () => {
    const { owner, admin, member, workspace } = await setup();
    const team = await newTeam(t, workspace, 'Old');
    await addTeamMember(t, team, member, 'admin');

    const put = await t.put(`/api/teams/${team.id}/`, { name: 'By owner', description: 'd1' }, owner);
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ id: team.id, name: 'By owner', description: 'd1' });
    const patch = await t.patch(`/api/teams/${team.id}/`, { description: 'by admin' }, admin);
    expect(patch.statusCode).toBe(200);
    expect(patch.json()).toMatchObject({ name: 'By owner', description: 'by admin' });
    // PUT keeps the description when it is left out.
    const byTeamAdmin = await t.put(`/api/teams/${team.id}/`, { name: 'By team admin' }, member);
    expect(byTeamAdmin.statusCode).toBe(200);
    expect(byTeamAdmin.json()).toMatchObject({ name: 'By team admin', description: 'by admin' });
    const [row] = await db().select().from(teams).where(eq(teams.id, team.id));
    expect(row).toMatchObject({ name: 'By team admin', description: 'by admin' });
  });

  it('refuses plain members and plain team members (403), outsiders (404), and changes nothing', async () => {
    const { member, outsider, workspace } = await setup();
    const team = await newTeam(t, workspace, 'Keep');
    const otherTeam = await newTeam(t, workspace, 'Other');
    await addTeamMember(t, team, member, 'member');
    await addTeamMember(t, otherTeam, member, 'admin');

    const res = await t.patch(`/api/teams/${team.id}/`, { name: 'Changed' }, member);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('permission_denied');
    expect((await t.put(`/api/teams/${team.id}/`, { name: 'Changed' }, outsider)).statusCode).toBe(404);
    const [row] = await db().select().from(teams).where(eq(teams.id, team.id));
    expect(row!.name).toBe('Keep');
  });

  it('refuses a name another team of the workspace has, and a PUT without a name', async () => {
    const { owner, workspace } = await setup();
    const team = await newTeam(t, workspace, 'One');
    await newTeam(t, workspace, 'Two');
    const clash = await t.patch(`/api/teams/${team.id}/`, { name: 'Two' }, owner);
    expect(clash.statusCode).toBe(400);
    expect(clash.json()).toMatchObject({ code: 'team_name_taken', errors: { name: [expect.any(String)] } });
    const missing = await t.put(`/api/teams/${team.id}/`, { description: 'only' }, owner);
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors.name).toBeDefined();
    // Renaming a team to its own name is not a clash.
    expect((await t.put(`/api/teams/${team.id}/`, { name: 'One' }, owner)).statusCode).toBe(200);
    const [row] = await db().select().from(teams).where(eq(teams.id, team.id));
    expect(row).toMatchObject({ name: 'One', description: '' });
  });
});

describe('DELETE /api/teams/{id}/', () => {
  it('lets a team admin delete the team with its memberships and invitations', async () => {
    const { owner, member, admin, workspace } = await setup();
    const team = await newTeam(t, workspace, 'Doomed');
    await addTeamMember(t, team, member, 'admin');
    await addTeamMember(t, team, owner, 'member');
    await newInvitation(t, { workspace, team, email: admin.email });

    const res = await t.delete(`/api/teams/${team.id}/`, member);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await teamRows(workspace.id)).toEqual([]);
    expect(await db().select().from(teamMemberships).where(eq(teamMemberships.teamId, team.id))).toEqual([]);
    expect(await db().select().from(invitations).where(eq(invitations.workspaceId, workspace.id))).toEqual([]);
  });

  it('lets the workspace owner and admins delete any team', async () => {
    const { owner, admin, workspace } = await setup();
    const one = await newTeam(t, workspace, 'One');
    const two = await newTeam(t, workspace, 'Two');
    expect((await t.delete(`/api/teams/${one.id}/`, owner)).statusCode).toBe(204);
    expect((await t.delete(`/api/teams/${two.id}/`, admin)).statusCode).toBe(204);
    expect(await teamRows(workspace.id)).toEqual([]);
  });

  it('refuses a plain member (403) and an outsider (404) and keeps the team', async () => {
    const { member, outsider, workspace } = await setup();
    const team = await newTeam(t, workspace, 'Stays');
    await addTeamMember(t, team, member, 'member');
    expect((await t.delete(`/api/teams/${team.id}/`, member)).statusCode).toBe(403);
    expect((await t.delete(`/api/teams/${team.id}/`, outsider)).statusCode).toBe(404);
    expect(await teamRows(workspace.id)).toHaveLength(1);
  });
});

describe('teams of an archived workspace', () => {
  it('can be read but not changed: writes answer 409 workspace_archived', async () => {
    const { owner, member, workspace } = await setup();
    const team = await newTeam(t, workspace, 'Frozen');
    await addTeamMember(t, team, member, 'admin');
    await archive(workspace.id);

    expect((await t.get(`/api/teams/${team.id}/`, member)).statusCode).toBe(200);
    expect((await t.get('/api/teams/', member)).json().count).toBe(1);
    for (const [res, who] of [
      [await t.put(`/api/teams/${team.id}/`, { name: 'Thawed' }, owner), 'owner'],
      [await t.patch(`/api/teams/${team.id}/`, { name: 'Thawed' }, member), 'team admin'],
      [await t.delete(`/api/teams/${team.id}/`, owner), 'owner'],
    ] as const) {
      expect(res.statusCode, who).toBe(409);
      expect(res.json().code, who).toBe('workspace_archived');
    }
    const rows = await db()
      .select()
      .from(teams)
      .where(and(eq(teams.id, team.id), eq(teams.name, 'Frozen')));
    expect(rows).toHaveLength(1);
  });
});
