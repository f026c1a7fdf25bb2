import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { forgetCachedAccess, useTestApp } from '../../../test/support/app.js';
import { addMember, addTeamMember, newTeam, newUser, newWorkspace } from '../../../test/support/factories.js';
import { workspaceMemberships, workspaces } from '../workspaces/workspaces.table.js';
import { teamMemberships } from './teams.table.js';

const t = useTestApp();
const db = () => t.deps.database.db;

/**
 * Workspace Acme (owner, admin, member, teamAdmin, plain) with team Core: teamAdmin is its admin,
 * plain is a member. The outsider owns another workspace with a team of its own.
 */
async function setup() {
  const [owner, admin, member, teamAdmin, plain, outsider] = await Promise.all(
    Array.from({ length: 6 }, () => newUser(t)),
  );
  const workspace = await newWorkspace(t, owner!, 'Acme');
  const otherWorkspace = await newWorkspace(t, outsider!, 'Elsewhere');
  await addMember(t, workspace, admin!, 'admin');
  for (const user of [member!, teamAdmin!, plain!]) await addMember(t, workspace, user, 'member');
  const core = await newTeam(t, workspace, 'Core');
  const ids = {
    teamAdmin: await addTeamMember(t, core, teamAdmin!, 'admin'),
    plain: await addTeamMember(t, core, plain!, 'member'),
  };
  const foreignTeam = await newTeam(t, otherWorkspace, 'Foreign');
  const foreignMembership = await addTeamMember(t, foreignTeam, outsider!, 'admin');
  return {
    owner: owner!,
    admin: admin!,
    member: member!,
    teamAdmin: teamAdmin!,
    plain: plain!,
    outsider: outsider!,
    workspace,
    otherWorkspace,
    core,
    foreignTeam,
    foreignMembership,
    ids,
  };
}

const roleOf = async (membershipId: string) =>
  (await db().select().from(teamMemberships).where(eq(teamMemberships.id, membershipId)))[0]?.role;

describe('GET /api/teammemberships/', () => {
  it("lists memberships of the teams in the caller's workspaces, with the user, oldest first", async () => {
    const { member, plain, teamAdmin, core, ids } = await setup();
    const res = await t.get('/api/teammemberships/', member);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      count: 2,
      next: null,
      previous: null,
      results: [
        {
          id: ids.teamAdmin,
          team: core.id,
          user: { id: teamAdmin.id, email: teamAdmin.email, name: teamAdmin.name },
          role: 'admin',
          created_at: expect.any(String),
        },
        {
          id: ids.plain,
          team: core.id,
          user: { id: plain.id, email: plain.email, name: plain.name },
          role: 'member',
          created_at: expect.any(String),
        },
      ],
    });
  });

  it('never shows memberships of foreign workspaces, even when filtered for', async () => {
    const { member, outsider, foreignTeam, otherWorkspace, foreignMembership } = await setup();
    const byTeam = await t.request('GET', '/api/teammemberships/', { as: member, query: { team: foreignTeam.id } });
    expect(byTeam.json()).toMatchObject({ count: 0, results: [] });
    const byWs = await t.request('GET', '/api/teammemberships/', {
      as: member,
      query: { workspace: otherWorkspace.id },
    });
    expect(byWs.json()).toMatchObject({ count: 0, results: [] });
    const own = await t.get('/api/teammemberships/', outsider);
    expect(own.json().results.map((m: { id: string }) => m.id)).toEqual([foreignMembership]);
  });

  it('filters by ?team= and ?workspace= and pages', async () => {
    const { owner, member, workspace, core, ids } = await setup();
    const second = await newTeam(t, workspace, 'Second');
    const secondId = await addTeamMember(t, second, member, 'member');
    // A second workspace of the member's, with a team, to tell the workspace filter apart.
    const mine = await newWorkspace(t, member, 'Mine');
    const mineTeam = await newTeam(t, mine, 'Solo');
    const mineId = await addTeamMember(t, mineTeam, member, 'admin');

    const idsOf = (res: { json(): { results: { id: string }[] } }) => res.json().results.map((m) => m.id);
    const all = await t.get('/api/teammemberships/', member);
    expect(idsOf(all)).toEqual([ids.teamAdmin, ids.plain, secondId, mineId]);
    const byTeam = await t.request('GET', '/api/teammemberships/', { as: member, query: { team: core.id } });
    expect(idsOf(byTeam)).toEqual([ids.teamAdmin, ids.plain]);
    const byWs = await t.request('GET', '/api/teammemberships/', { as: member, query: { workspace: workspace.id } });
    expect(idsOf(byWs)).toEqual([ids.teamAdmin, ids.plain, secondId]);
    const both = await t.request('GET', '/api/teammemberships/', {
      as: member,
      query: { workspace: mine.id, team: core.id },
    });
    expect(both.json().count).toBe(0);

    const page = await t.request('GET', '/api/teammemberships/', { as: owner, query: { limit: '2', offset: '1' } });
    expect(page.json()).toMatchObject({ count: 3, next: null });
    expect(idsOf(page)).toEqual([ids.plain, secondId]);
    expect(page.json().previous).toMatch(/limit=2/);

    const bad = await t.request('GET', '/api/teammemberships/', { as: member, query: { team: 'x' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.team).toBeDefined();
  });
});

describe('GET /api/teammemberships/mine/', () => {
  it("is a plain array of the caller's own team memberships", async () => {
    const { plain, member, core, ids } = await setup();
    const res = await t.get('/api/teammemberships/mine/', plain);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([expect.objectContaining({ id: ids.plain, team: core.id, role: 'member' })]);
    expect((await t.get('/api/teammemberships/mine/', member)).json()).toEqual([]);
    expect((await t.get('/api/teammemberships/mine/', null)).statusCode).toBe(403);
  });
});

describe('GET /api/teammemberships/{id}/', () => {
  it('shows a membership to workspace members and 404 to everyone else', async () => {
    const { member, outsider, plain, ids } = await setup();
    const res = await t.get(`/api/teammemberships/${ids.plain}/`, member);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: ids.plain, user: { id: plain.id }, role: 'member' });
    const hidden = await t.get(`/api/teammemberships/${ids.plain}/`, outsider);
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json()).toEqual({ detail: 'Team membership not found.', code: 'not_found' });
    expect((await t.get('/api/teammemberships/00000000-0000-4000-8000-000000000000/', member)).statusCode).toBe(404);
    expect((await t.get('/api/teammemberships/garbage/', member)).statusCode).toBe(404);
  });
});

describe('PUT and PATCH /api/teammemberships/{id}/', () => {
  it('lets a team admin change the role of another team member', async () => {
    const { teamAdmin, ids } = await setup();
    const res = await t.put(`/api/teammemberships/${ids.plain}/`, { role: 'admin' }, teamAdmin);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: ids.plain, role: 'admin' });
    expect(await roleOf(ids.plain)).toBe('admin');
  });

  it('lets the workspace owner and admins change any team role, their own included', async () => {
    const { owner, admin, core, ids } = await setup();
    expect((await t.patch(`/api/teammemberships/${ids.teamAdmin}/`, { role: 'member' }, owner)).statusCode).toBe(200);
    expect(await roleOf(ids.teamAdmin)).toBe('member');
    const adminOwn = await addTeamMember(t, core, admin, 'member');
    const res = await t.put(`/api/teammemberships/${adminOwn}/`, { role: 'admin' }, admin);
    expect(res.statusCode).toBe(200);
    expect(await roleOf(adminOwn)).toBe('admin');
  });

  it('refuses a team admin changing their own team role (403 cannot_change_own_role)', async () => {
    const { teamAdmin, ids } = await setup();
    const res = await t.put(`/api/teammemberships/${ids.teamAdmin}/`, { role: 'member' }, teamAdmin);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('cannot_change_own_role');
    expect(await roleOf(ids.teamAdmin)).toBe('admin');
  });

  it('refuses plain team members and workspace members (403) and outsiders (404)', async () => {
    const { plain, member, outsider, ids } = await setup();
    const own = await t.put(`/api/teammemberships/${ids.plain}/`, { role: 'admin' }, plain);
    expect(own.statusCode).toBe(403);
    expect(own.json().code).toBe('permission_denied');
    expect((await t.put(`/api/teammemberships/${ids.teamAdmin}/`, { role: 'member' }, member)).statusCode).toBe(403);
    expect((await t.put(`/api/teammemberships/${ids.plain}/`, { role: 'admin' }, outsider)).statusCode).toBe(404);
    expect(await roleOf(ids.plain)).toBe('member');
    expect(await roleOf(ids.teamAdmin)).toBe('admin');
  });

  it('rejects an unknown role with a JSON 400 and changes nothing', async () => {
    const { owner, ids } = await setup();
    for (const body of [{ role: 'owner' }, {}, { role: 7 }]) {
      const res = await t.put(`/api/teammemberships/${ids.plain}/`, body, owner);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_error', errors: { role: expect.any(Array) } });
    }
    expect(await roleOf(ids.plain)).toBe('member');
  });
});

describe('DELETE /api/teammemberships/{id}/', () => {
  it('lets a team admin, the owner and a workspace admin remove members', async () => {
    const { owner, admin, teamAdmin, member, core, ids } = await setup();
    expect((await t.delete(`/api/teammemberships/${ids.plain}/`, teamAdmin)).statusCode).toBe(204);
    expect(await roleOf(ids.plain)).toBeUndefined();
    const memberId = await addTeamMember(t, core, member);
    expect((await t.delete(`/api/teammemberships/${memberId}/`, owner)).statusCode).toBe(204);
    expect((await t.delete(`/api/teammemberships/${ids.teamAdmin}/`, admin)).statusCode).toBe(204);
    expect(await db().select().from(teamMemberships).where(eq(teamMemberships.teamId, core.id))).toEqual([]);
  });

  it('lets any member leave a team', async () => {
    const { plain, teamAdmin, ids } = await setup();
    expect((await t.delete(`/api/teammemberships/${ids.plain}/`, plain)).statusCode).toBe(204);
    expect((await t.delete(`/api/teammemberships/${ids.teamAdmin}/`, teamAdmin)).statusCode).toBe(204);
    expect(await roleOf(ids.plain)).toBeUndefined();
    expect(await roleOf(ids.teamAdmin)).toBeUndefined();
  });

  it('refuses plain members removing others (403) and outsiders (404)', async () => {
    const { plain, member, outsider, ids } = await setup();
    const res = await t.delete(`/api/teammemberships/${ids.teamAdmin}/`, plain);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('permission_denied');
    expect((await t.delete(`/api/teammemberships/${ids.plain}/`, member)).statusCode).toBe(403);
    expect((await t.delete(`/api/teammemberships/${ids.plain}/`, outsider)).statusCode).toBe(404);
    expect(await roleOf(ids.plain)).toBe('member');
    expect(await roleOf(ids.teamAdmin)).toBe('admin');
  });
});

describe('team memberships of an archived workspace', () => {
  it('answer 409 workspace_archived to role changes, removals and leaving', async () => {
    const { owner, plain, workspace, ids } = await setup();
    await db().update(workspaces).set({ status: 'archived' }).where(eq(workspaces.id, workspace.id));
    forgetCachedAccess(t);
    for (const res of [
      await t.put(`/api/teammemberships/${ids.plain}/`, { role: 'admin' }, owner),
      await t.delete(`/api/teammemberships/${ids.teamAdmin}/`, owner),
      await t.delete(`/api/teammemberships/${ids.plain}/`, plain),
    ]) {
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('workspace_archived');
    }
    expect(await roleOf(ids.plain)).toBe('member');
    expect(await roleOf(ids.teamAdmin)).toBe('admin');
    expect((await t.get(`/api/teammemberships/${ids.plain}/`, plain)).statusCode).toBe(200);
  });
});

describe('leaving or being removed from a workspace', () => {
  async function setupAcrossWorkspaces() {
    const base = await setup();
    // The plain member also belongs to the outsider's workspace and its team: that must survive.
    await addMember(t, base.otherWorkspace, base.plain, 'member');
    const keep = await addTeamMember(t, base.foreignTeam, base.plain, 'member');
    const second = await newTeam(t, base.workspace, 'Second');
    const alsoGone = await addTeamMember(t, second, base.plain, 'admin');
    return { ...base, keep, alsoGone };
  }

  it('DELETE /api/workspacememberships/{id}/ removes the member from every team of that workspace only', async () => {
    const { owner, plain, workspace, ids, keep, alsoGone } = await setupAcrossWorkspaces();
    const wsMembership = (await t.get('/api/workspacememberships/mine/', plain))
      .json()
      .find((m: { workspace: string }) => m.workspace === workspace.id);
    expect((await t.delete(`/api/workspacememberships/${wsMembership.id}/`, owner)).statusCode).toBe(204);
    const left = await db().select().from(workspaceMemberships).where(eq(workspaceMemberships.userId, plain.id));
    expect(left.map((m) => m.workspaceId)).not.toContain(workspace.id);

    expect(await roleOf(ids.plain)).toBeUndefined();
    expect(await roleOf(alsoGone)).toBeUndefined();
    expect(await roleOf(keep)).toBe('member');
    const mine = await t.get('/api/teammemberships/mine/', plain);
    expect(mine.json().map((m: { id: string }) => m.id)).toEqual([keep]);
  });

  it('POST /api/workspaces/{id}/leave/ does the same', async () => {
    const { plain, workspace, ids, keep, alsoGone } = await setupAcrossWorkspaces();
    expect((await t.post(`/api/workspaces/${workspace.id}/leave/`, {}, plain)).statusCode).toBe(204);
    expect(await roleOf(ids.plain)).toBeUndefined();
    expect(await roleOf(alsoGone)).toBeUndefined();
    expect(await roleOf(keep)).toBe('member');
  });
});
