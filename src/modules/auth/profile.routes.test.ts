import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { addMember, newUser, newWorkspace } from '../../../test/support/factories.js';

const t = useTestApp();

describe('GET /api/users/me/', () => {
  it('returns the user with each workspace, role and ownership', async () => {
    const user = await newUser(t, { name: 'Grace' });
    const own = await newWorkspace(t, user, 'Mine');
    const other = await newWorkspace(t, await newUser(t), 'Theirs');
    await addMember(t, other, user, 'member');
    const res = await t.get('/api/users/me/', user);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: user.id,
      email: user.email,
      name: 'Grace',
      email_verified: true,
      workspaces: [
        { id: own.id, name: 'Mine', slug: 'mine', role: 'admin', is_owner: true },
        { id: other.id, name: 'Theirs', slug: 'theirs', role: 'member', is_owner: false },
      ],
    });
  });

  it('has no password hash or other internal fields', async () => {
    const user = await newUser(t);
    const body = (await t.get('/api/users/me/', user)).body;
    expect(body).not.toMatch(/password|hash|is_active/i);
  });
});

describe('PATCH /api/users/{id}/', () => {
  it('updates your own name only', async () => {
    const user = await newUser(t);
    const res = await t.patch(`/api/users/${user.id}/`, { name: '  Ada L.  ' }, user);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: user.id, email: user.email, name: 'Ada L.' });
  });

  it('ignores other fields such as email', async () => {
    const user = await newUser(t);
    const res = await t.patch(`/api/users/${user.id}/`, { name: 'N', email: 'evil@example.com' }, user);
    expect(res.json().email).toBe(user.email);
  });

  it("answers 403 for anyone else's id, existing or not, and changes nothing", async () => {
    const user = await newUser(t);
    const other = await newUser(t, { name: 'Untouched' });
    for (const id of [other.id, 999_999, 'abc']) {
      expect((await t.patch(`/api/users/${id}/`, { name: 'Hacked' }, user)).statusCode).toBe(403);
    }
    expect((await t.get('/auth/users/me/', other)).json().name).toBe('Untouched');
  });

  it('refuses a name over 150 characters', async () => {
    const user = await newUser(t);
    expect((await t.patch(`/api/users/${user.id}/`, { name: 'x'.repeat(151) }, user)).statusCode).toBe(400);
  });
});
