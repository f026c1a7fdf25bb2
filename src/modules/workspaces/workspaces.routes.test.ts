import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { addMember, newUser, newWorkspace } from '../../../test/support/factories.js';
import { teamMemberships, teams } from '../teams/teams.table.js';
import { slugify } from './workspaces.service.js';
import { workspaceMemberships, workspaces } from './workspaces.table.js';

const t = useTestApp();

describe('slugify', () => {
  it.each([
    ['Acme Research Ltd.', 'acme-research-ltd'],
    ['  Ünïcödé   Café  ', 'unicode-cafe'],
    ['!!!', 'workspace'],
    ['a'.repeat(80), 'a'.repeat(50)],
  ])('%s → %s', (name, slug) => expect(slugify(name)).toBe(slug));
});

describe('create and list', () => {
  it('creates a workspace owned by the caller with an admin membership', async () => {
    const user = await newUser(t);
    const res = await t.post('/api/workspaces/', { name: 'Acme Research' }, user);
    expect(res.statusCode).toBe(201);
    const ws = res.json();
    expect(ws).toEqual({
      id: expect.any(String),
      name: 'Acme Research',
      slug: 'acme-research',
      owner: user.id,
      status: 'active',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const [membership] = await t.deps.database.db
      .select()
      .from(workspaceMemberships)
      .where(eq(workspaceMemberships.workspaceId, ws.id));
    expect(membership).toMatchObject({ userId: user.id, role: 'admin' });
  });

  it('gives every workspace a unique slug, also when created concurrently', async () => {
    const user = await newUser(t);
    const created = await Promise.all(Array.from({ length: 5 }, () => t.post('/api/workspaces/', { name: 'Same Name' }, user)));
    const slugs = created.map((r) => r.json().slug as string);
    expect(new Set(slugs).size).toBe(5);
    expect(slugs).toContain('same-name');
    for (const slug of slugs) expect(slug).toMatch(/^same-name(-[a-z0-9x]{4,})?$/);
  });

  it.each([[{}], [{ name: '' }], [{ name: '   ' }], [{ name: 'x'.repeat(101) }], [{ name: 42 }]])(
    'refuses %j with 400 and creates nothing',
    async (body) => {
      const user = await newUser(t);
      const res = await t.post('/api/workspaces/', body, user);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_error', errors: { name: expect.any(Array) } });
      expect(await t.deps.database.db.select().from(workspaces)).toHaveLength(0);
    },
  );

  it('lists only the caller’s workspaces, paginated', async () => {
    const user = await newUser(t);
    const other = await newUser(t);
    for (const name of ['One', 'Two', 'Three']) await newWorkspace(t, user, name);
    await newWorkspace(t, other, 'Not mine');
    const first = await t.get('/api/workspaces/?limit=2', user);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ count: 3, previous: null });
    expect(first.json().results.map((w: { name: string }) => w.name)).toEqual(['One', 'Two']);
    expect(first.json().next).toBe('http://localhost/api/workspaces/?limit=2&offset=2');
    const second = await t.get('/api/workspaces/?limit=2&offset=2', user);
    expect(second.json().results.map((w: { name: string }) => w.name)).toEqual(['Three']);
    expect(second.json().next).toBeNull();
    expect(second.json().previous).toBe('http://localhost/api/workspaces/?limit=2');
  });

  it.each(['limit=0', 'limit=201', 'offset=-1', 'limit=abc'])('refuses ?%s with 400', async (query) => {
    const user = await newUser(t);
    expect((await t.get(`/api/workspaces/?${query}`, user)).statusCode).toBe(400);
  });
});

describe('retrieve', () => {
  it('answers 403 for a workspace the caller is not in, an unknown id and a malformed id alike', async () => {
    const owner = await newUser(t);
    const outsider = await newUser(t);
    const ws = await newWorkspace(t, owner);
    for (const id of [ws.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await t.get(`/api/workspaces/${id}/`, outsider);
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('not_workspace_member');
    }
  });
});

describe('update and archive', () => {
  it('lets an admin rename, and keeps the slug', async () => {
    const owner = await newUser(t);
    const admin = await newUser(t);
    const ws = await newWorkspace(t, owner, 'Old Name');
    await addMember(t, ws, admin, 'admin');
    const res = await t.patch(`/api/workspaces/${ws.id}/`, { name: 'New Name' }, admin);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'New Name', slug: 'old-name' });
  });

  it('refuses a plain member and changes nothing', async () => {
    const owner = await newUser(t);
    const member = await newUser(t);
    const ws = await newWorkspace(t, owner, 'Keep');
    await addMember(t, ws, member);
    const res = await t.patch(`/api/workspaces/${ws.id}/`, { name: 'Hijacked' }, member);
    expect(res.statusCode).toBe(403);
    expect((await t.get(`/api/workspaces/${ws.id}/`, owner)).json().name).toBe('Keep');
  });

  it('refuses an unknown status value', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const res = await t.patch(`/api/workspaces/${ws.id}/`, { status: 'deleted' }, owner);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.status).toBeDefined();
  });

  it('archives with status, refuses writes with 409 while archived, and un-archives', async () => {
    const owner = await newUser(t);
    const admin = await newUser(t);
    const member = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await addMember(t, ws, admin, 'admin');
    const memberId = await addMember(t, ws, member);

    const archived = await t.patch(`/api/workspaces/${ws.id}/`, { status: 'archived' }, admin);
    expect(archived.statusCode).toBe(200);
    expect(archived.json().status).toBe('archived');

    // Reading still works.
    expect((await t.get(`/api/workspaces/${ws.id}/`, member)).statusCode).toBe(200);
    // Writes other than the workspace itself, leaving and deleting are refused.
    const transfer = await t.post(`/api/workspaces/${ws.id}/transfer-ownership/`, { user: admin.id }, owner);
    expect(transfer.statusCode).toBe(409);
    expect(transfer.json()).toEqual({ detail: expect.any(String), code: 'workspace_archived' });
    expect((await t.put(`/api/workspacememberships/${memberId}/`, { role: 'admin' }, owner)).statusCode).toBe(409);
    expect((await t.delete(`/api/workspacememberships/${memberId}/`, owner)).statusCode).toBe(409);
    // Renaming the archived workspace itself is an update of the workspace: allowed.
    expect((await t.patch(`/api/workspaces/${ws.id}/`, { name: 'Still here' }, owner)).statusCode).toBe(200);
    // Leaving is allowed.
    expect((await t.post(`/api/workspaces/${ws.id}/leave/`, {}, member)).statusCode).toBe(204);

    const restored = await t.patch(`/api/workspaces/${ws.id}/`, { status: 'active' }, owner);
    expect(restored.json().status).toBe('active');
    expect((await t.post(`/api/workspaces/${ws.id}/transfer-ownership/`, { user: admin.id }, owner)).statusCode).toBe(200);
  });

  it('deletes an archived workspace', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await t.patch(`/api/workspaces/${ws.id}/`, { status: 'archived' }, owner);
    expect((await t.delete(`/api/workspaces/${ws.id}/`, owner)).statusCode).toBe(204);
  });
});

describe('delete', () => {
  it('is for the owner only and removes memberships and teams with it', async () => {
    const owner = await newUser(t);
    const admin = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await addMember(t, ws, admin, 'admin');
    await t.deps.database.db.insert(teams).values({ workspaceId: ws.id, name: 'T' });
    expect((await t.delete(`/api/workspaces/${ws.id}/`, admin)).statusCode).toBe(403);
    expect((await t.delete(`/api/workspaces/${ws.id}/`, owner)).statusCode).toBe(204);
    const db = t.deps.database.db;
    expect(await db.select().from(workspaces)).toHaveLength(0);
    expect(await db.select().from(workspaceMemberships)).toHaveLength(0);
    expect(await db.select().from(teams)).toHaveLength(0);
    expect((await t.get(`/api/workspaces/${ws.id}/`, owner)).statusCode).toBe(403);
  });
});

describe('transfer ownership', () => {
  it('makes another member the owner (admin) and keeps the old owner as admin', async () => {
    const owner = await newUser(t);
    const member = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await addMember(t, ws, member);
    const res = await t.post(`/api/workspaces/${ws.id}/transfer-ownership/`, { user: member.id }, owner);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: ws.id, owner: member.id });
    const me = (await t.get('/api/users/me/', owner)).json();
    expect(me.workspaces).toEqual([{ id: ws.id, name: 'Test Workspace', slug: ws.slug, role: 'admin', is_owner: false }]);
    const them = (await t.get('/api/users/me/', member)).json();
    expect(them.workspaces[0]).toMatchObject({ role: 'admin', is_owner: true });
    // The old owner can now leave; the new one cannot.
    expect((await t.post(`/api/workspaces/${ws.id}/leave/`, {}, member)).statusCode).toBe(403);
    expect((await t.post(`/api/workspaces/${ws.id}/leave/`, {}, owner)).statusCode).toBe(204);
  });

  it.each([
    ['a non-member', 'stranger'],
    ['the owner themself', 'self'],
    ['an unknown user id', 'unknown'],
  ])('refuses %s with 400 and changes nothing', async (_label, who) => {
    const owner = await newUser(t);
    const stranger = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const target = who === 'stranger' ? stranger.id : who === 'self' ? owner.id : 999_999;
    const res = await t.post(`/api/workspaces/${ws.id}/transfer-ownership/`, { user: target }, owner);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_new_owner');
    expect((await t.get(`/api/workspaces/${ws.id}/`, owner)).json().owner).toBe(owner.id);
  });

  it('refuses an admin who is not the owner', async () => {
    const owner = await newUser(t);
    const admin = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await addMember(t, ws, admin, 'admin');
    expect((await t.post(`/api/workspaces/${ws.id}/transfer-ownership/`, { user: admin.id }, admin)).statusCode).toBe(403);
  });
});

describe('leave', () => {
  it('removes the membership and the team memberships in that workspace only', async () => {
    const owner = await newUser(t);
    const member = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const elsewhere = await newWorkspace(t, owner, 'Elsewhere');
    await addMember(t, ws, member);
    await addMember(t, elsewhere, member);
    const db = t.deps.database.db;
    const [team] = await db.insert(teams).values({ workspaceId: ws.id, name: 'Here' }).returning();
    const [otherTeam] = await db.insert(teams).values({ workspaceId: elsewhere.id, name: 'There' }).returning();
    await db.insert(teamMemberships).values([
      { teamId: team!.id, userId: member.id, role: 'member' },
      { teamId: otherTeam!.id, userId: member.id, role: 'member' },
    ]);

    expect((await t.post(`/api/workspaces/${ws.id}/leave/`, {}, member)).statusCode).toBe(204);
    expect((await t.get(`/api/workspaces/${ws.id}/`, member)).statusCode).toBe(403);
    const left = await db.select().from(teamMemberships).where(eq(teamMemberships.userId, member.id));
    expect(left.map((m) => m.teamId)).toEqual([otherTeam!.id]);
  });

  it('refuses the owner with owner_cannot_leave', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const res = await t.post(`/api/workspaces/${ws.id}/leave/`, {}, owner);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('owner_cannot_leave');
  });
});
