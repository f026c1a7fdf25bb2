import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { addMember, newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { teamMemberships, teams } from '../teams/teams.table.js';
import { workspaceMemberships } from './workspaces.table.js';

const t = useTestApp();

async function setup() {
  const owner = await newUser(t, { name: 'Owner' });
  const admin = await newUser(t, { name: 'Admin' });
  const member = await newUser(t, { name: 'Member' });
  const ws = await newWorkspace(t, owner);
  const ids = {
    owner: (await t.deps.services.memberships.mine(owner.id))[0]!.id,
    admin: await addMember(t, ws, admin, 'admin'),
    member: await addMember(t, ws, member, 'member'),
  };
  return { owner, admin, member, ws, ids };
}

const roleOf = async (membershipId: string, as: TestUser) =>
  (await t.get(`/api/workspacememberships/${membershipId}/`, as)).json().role as string;

describe('listing', () => {
  it('lists memberships of the caller’s workspaces with user details', async () => {
    const { owner, member, ws } = await setup();
    const stranger = await newUser(t);
    await newWorkspace(t, stranger, 'Unrelated');
    const res = await t.get('/api/workspacememberships/', member);
    expect(res.statusCode).toBe(200);
    expect(res.json().count).toBe(3);
    expect(res.json().results[0]).toEqual({
      id: expect.any(String),
      workspace: ws.id,
      user: { id: owner.id, email: owner.email, name: 'Owner' },
      role: 'admin',
      created_at: expect.any(String),
    });
  });

  it('filters by ?workspace= and shows nothing of a workspace the caller is not in', async () => {
    const { member, ws } = await setup();
    const stranger = await newUser(t);
    const theirs = await newWorkspace(t, stranger, 'Theirs');
    await addMember(t, theirs, await newUser(t));
    expect((await t.get(`/api/workspacememberships/?workspace=${ws.id}`, member)).json().count).toBe(3);
    expect((await t.get(`/api/workspacememberships/?workspace=${theirs.id}`, member)).json()).toMatchObject({
      count: 0,
      results: [],
    });
    expect((await t.get('/api/workspacememberships/?workspace=nope', member)).statusCode).toBe(400);
  });

  it('mine/ returns a plain array of the caller’s own memberships', async () => {
    const { member, ws } = await setup();
    const other = await newWorkspace(t, await newUser(t), 'Other');
    await addMember(t, other, member, 'admin');
    const res = await t.get('/api/workspacememberships/mine/', member);
    expect(res.json()).toHaveLength(2);
    expect(res.json().map((m: { workspace: string; role: string }) => [m.workspace, m.role])).toEqual([
      [ws.id, 'member'],
      [other.id, 'admin'],
    ]);
  });

  it('retrieve answers 404 for a membership outside the caller’s workspaces and for junk ids', async () => {
    const { ids } = await setup();
    const stranger = await newUser(t);
    expect((await t.get(`/api/workspacememberships/${ids.member}/`, stranger)).statusCode).toBe(404);
    expect((await t.get('/api/workspacememberships/junk/', stranger)).statusCode).toBe(404);
  });
});

describe('changing roles', () => {
  it('lets the owner and admins promote and demote others', async () => {
    const { owner, admin, ids } = await setup();
    const res = await t.put(`/api/workspacememberships/${ids.member}/`, { role: 'admin' }, admin);
    expect(res.statusCode).toBe(200);
    expect(res.json().role).toBe('admin');
    expect((await t.put(`/api/workspacememberships/${ids.admin}/`, { role: 'member' }, owner)).statusCode).toBe(200);
    expect(await roleOf(ids.admin, owner)).toBe('member');
  });

  it('refuses your own role, even for an admin', async () => {
    const { admin, ids } = await setup();
    const res = await t.put(`/api/workspacememberships/${ids.admin}/`, { role: 'member' }, admin);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('cannot_change_own_role');
    expect(await roleOf(ids.admin, admin)).toBe('admin');
  });

  it("refuses the owner's role", async () => {
    const { owner, admin, ids } = await setup();
    const res = await t.put(`/api/workspacememberships/${ids.owner}/`, { role: 'member' }, admin);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('cannot_change_owner_role');
    expect(await roleOf(ids.owner, owner)).toBe('admin');
  });

  it('refuses plain members', async () => {
    const { member, ids, owner } = await setup();
    const other = await newUser(t);
    const otherId = await addMember(t, { id: (await t.get('/api/workspaces/', owner)).json().results[0].id }, other);
    expect((await t.put(`/api/workspacememberships/${otherId}/`, { role: 'admin' }, member)).statusCode).toBe(403);
    expect((await t.put(`/api/workspacememberships/${ids.member}/`, { role: 'admin' }, member)).statusCode).toBe(403);
  });

  it.each([[{ role: 'owner' }], [{ role: 'superuser' }], [{}]])('refuses body %j with 400', async (body) => {
    const { owner, ids } = await setup();
    const res = await t.put(`/api/workspacememberships/${ids.member}/`, body, owner);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.role).toBeDefined();
    expect(await roleOf(ids.member, owner)).toBe('member');
  });
});

describe('removing members', () => {
  it('removes a member and their team memberships in the workspace; they lose access', async () => {
    const { admin, member, ws, ids } = await setup();
    const db = t.deps.database.db;
    const [team] = await db.insert(teams).values({ workspaceId: ws.id, name: 'T' }).returning();
    await db.insert(teamMemberships).values({ teamId: team!.id, userId: member.id, role: 'admin' });
    expect((await t.delete(`/api/workspacememberships/${ids.member}/`, admin)).statusCode).toBe(204);
    expect((await t.get(`/api/workspaces/${ws.id}/`, member)).statusCode).toBe(403);
    expect(await db.select().from(teamMemberships).where(eq(teamMemberships.userId, member.id))).toEqual([]);
    expect(await db.select().from(workspaceMemberships).where(eq(workspaceMemberships.userId, member.id))).toEqual([]);
  });

  it('never removes the owner', async () => {
    const { owner, admin, ids } = await setup();
    for (const caller of [admin, owner]) {
      const res = await t.delete(`/api/workspacememberships/${ids.owner}/`, caller);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('cannot_remove_owner');
    }
  });

  it('refuses plain members', async () => {
    const { member, ids, owner } = await setup();
    expect((await t.delete(`/api/workspacememberships/${ids.admin}/`, member)).statusCode).toBe(403);
    expect(await roleOf(ids.admin, owner)).toBe('admin');
  });
});
