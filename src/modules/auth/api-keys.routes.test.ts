import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { forgetCachedAccess, useTestApp } from '../../../test/support/app.js';
import { parseRawResponse, type RawResponse } from '../../../test/support/raw-http.js';
import { addMember, newTeam, newUser, newWorkspace, TEST_PASSWORD, type TestUser } from '../../../test/support/factories.js';
import { randomToken, sha256Hex } from '../../platform/secrets.js';
import * as usersRepo from '../users/users.repo.js';
import { apiKeys } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';

const t = useTestApp();
const db = () => t.deps.database.db;

/** A caller that authenticates with `key` instead of a session token. */
const withKey = (key: string) => ({ token: key });

async function createKey(as: TestUser, body: Record<string, unknown> = {}) {
  const res = await t.post('/auth/api-keys/', { name: 'CI', ...body }, as);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; key: string; prefix: string; workspace: string | null; read_only: boolean };
}

describe('creating, listing and revoking keys', () => {
  it('creates a key that is shown once, prefixed, and listed without it', async () => {
    const alice = await newUser(t);
    const res = await t.post('/auth/api-keys/', { name: 'Zapier' }, alice);
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json();
    expect(created).toEqual({
      id: expect.any(String),
      name: 'Zapier',
      key: expect.stringMatching(/^wsai_[A-Za-z0-9_-]{43}$/),
      prefix: created.key.slice(0, 13),
      created_at: expect.any(String),
      last_used_at: null,
      expires_at: null,
      workspace: null,
      read_only: false,
    });

    const list = await t.get('/auth/api-keys/', alice);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({
      count: 1,
      next: null,
      previous: null,
      results: [{ ...created, key: undefined }].map(({ key: _key, ...rest }) => rest),
    });
    expect(list.body).not.toContain(created.key);
  });

  it('stores only a SHA-256 of the key: no column holds the key', async () => {
    const alice = await newUser(t);
    const { key } = await createKey(alice);
    const rows = await db().select().from(apiKeys);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.keyHash).toBe(sha256Hex(key));
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(13));
  });

  it('lists only the caller’s keys, newest first, paginated', async () => {
    const [alice, bob] = [await newUser(t), await newUser(t)];
    for (const name of ['one', 'two', 'three']) await createKey(alice, { name });
    await createKey(bob, { name: 'bob' });
    const page = (await t.get('/auth/api-keys/?limit=2', alice)).json();
    expect(page.count).toBe(3);
    expect(page.results.map((k: { name: string }) => k.name)).toEqual(['three', 'two']);
    expect(page.next).toContain('offset=2');
    expect((await t.get('/auth/api-keys/?limit=2&offset=2', alice)).json().results.map((k: { name: string }) => k.name)).toEqual([
      'one',
    ]);
  });

  it('revokes at once (204); the key then gets 403 authentication_failed and leaves the list', async () => {
    const alice = await newUser(t);
    const { id, key } = await createKey(alice);
    expect((await t.get('/api/users/me/', withKey(key))).statusCode).toBe(200);
    expect((await t.delete(`/auth/api-keys/${id}/`, alice)).statusCode).toBe(204);
    const refused = await t.get('/api/users/me/', withKey(key));
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ detail: expect.any(String), code: 'authentication_failed' });
    expect((await t.get('/auth/api-keys/', alice)).json().count).toBe(0);
    expect((await t.delete(`/auth/api-keys/${id}/`, alice)).statusCode).toBe(404);
  });

  it("answers 404 for another user's key, an unknown id and a malformed one, and leaves the key working", async () => {
    const [alice, bob] = [await newUser(t), await newUser(t)];
    const { id, key } = await createKey(alice);
    expect((await t.delete(`/auth/api-keys/${id}/`, bob)).statusCode).toBe(404);
    expect((await t.delete('/auth/api-keys/00000000-0000-4000-8000-000000000000/', alice)).statusCode).toBe(404);
    expect((await t.delete('/auth/api-keys/not-a-uuid/', alice)).statusCode).toBe(404);
    expect((await t.get('/api/users/me/', withKey(key))).statusCode).toBe(200);
  });

  it.each([
    ['no name', { name: undefined }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, 'name'],
    ['an expiry that is not a date', { expires_at: 'tomorrow' }, 'expires_at'],
    ['an expiry in the past', { expires_at: new Date(Date.now() - 60_000).toISOString() }, 'expires_at'],
    ['a workspace that is not a UUID', { workspace: 'mine' }, 'workspace'],
    ['read_only that is not a boolean', { read_only: 'yes' }, 'read_only'],
  ])('refuses %s with 400', async (_label, overrides, field) => {
    const alice = await newUser(t);
    const res = await t.post('/auth/api-keys/', { name: 'CI', ...overrides }, alice);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors[field]).toBeDefined();
    expect(await db().select().from(apiKeys)).toEqual([]);
  });

  it('refuses (400 invalid_workspace) a workspace the caller is not a member of, or that does not exist', async () => {
    const [alice, bob] = [await newUser(t), await newUser(t)];
    const bobs = await newWorkspace(t, bob);
    for (const workspace of [bobs.id, '00000000-0000-4000-8000-000000000000']) {
      const res = await t.post('/auth/api-keys/', { name: 'CI', workspace }, alice);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_workspace', errors: { workspace: expect.any(Array) } });
    }
  });

  it('needs a signed-in user', async () => {
    expect((await t.post('/auth/api-keys/', { name: 'CI' }, null)).statusCode).toBe(403);
    expect((await t.get('/auth/api-keys/', null)).statusCode).toBe(403);
  });
});

describe('a key as a Bearer token', () => {
  it('authenticates like a session token (Bearer and Token schemes) and records its use at most once a minute', async () => {
    const alice = await newUser(t);
    const ws = await newWorkspace(t, alice);
    const { id, key } = await createKey(alice);
    const me = await t.get('/api/users/me/', withKey(key));
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ id: alice.id, email: alice.email, workspaces: [{ id: ws.id }] });
    const viaToken = await t.request('GET', '/auth/users/me/', { headers: { authorization: `Token ${key}` } });
    expect(viaToken.statusCode).toBe(200);
    expect(viaToken.json()).toEqual({ id: alice.id, email: alice.email, name: alice.name, email_verified: true });

    const [row] = await db().select().from(apiKeys).where(eq(apiKeys.id, id));
    expect(row!.lastUsedAt).toBeInstanceOf(Date);
    await t.get('/api/users/me/', withKey(key));
    const [again] = await db().select().from(apiKeys).where(eq(apiKeys.id, id));
    expect(again!.lastUsedAt!.getTime()).toBe(row!.lastUsedAt!.getTime());
    // A minute later the next use is recorded.
    await db().update(apiKeys).set({ lastUsedAt: new Date(Date.now() - 61_000) }).where(eq(apiKeys.id, id));
    forgetCachedAccess(t);
    await t.get('/api/users/me/', withKey(key));
    const [later] = await db().select().from(apiKeys).where(eq(apiKeys.id, id));
    expect(later!.lastUsedAt!.getTime()).toBeGreaterThan(Date.now() - 10_000);
    const listed = (await t.get('/auth/api-keys/', alice)).json().results[0];
    expect(listed.last_used_at).toBe(later!.lastUsedAt!.toISOString());
  });

  it('refuses an expired key with 403 authentication_failed, like a bad token', async () => {
    const alice = await newUser(t);
    const { id, key } = await createKey(alice, { expires_at: new Date(Date.now() + 3600_000).toISOString() });
    expect((await t.get('/api/users/me/', withKey(key))).statusCode).toBe(200);
    await db().update(apiKeys).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(apiKeys.id, id));
    forgetCachedAccess(t);
    const res = await t.get('/api/users/me/', withKey(key));
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('authentication_failed');
    // Still listed (with its expiry) so its owner sees why it stopped.
    expect((await t.get('/auth/api-keys/', alice)).json().results).toHaveLength(1);
  });

  it('refuses an unknown key of the right shape with 403 authentication_failed', async () => {
    const res = await t.get('/api/users/me/', withKey(`wsai_${randomToken(32)}`));
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('authentication_failed');
  });
});

describe('account management with a key', () => {
  it.each([
    ['POST', '/auth/api-keys/', { name: 'child' }],
    ['GET', '/auth/api-keys/', undefined],
    ['DELETE', '/auth/api-keys/00000000-0000-4000-8000-000000000000/', undefined],
    ['POST', '/auth/users/set_password/', { current_password: TEST_PASSWORD, new_password: 'another-long-secret' }],
    ['DELETE', '/auth/users/me/', { current_password: TEST_PASSWORD }],
    ['PATCH', '/auth/users/me/', { name: 'Renamed' }],
    ['PUT', '/auth/users/me/', { name: 'Renamed' }],
    ['POST', '/auth/token/logout/', {}],
  ] as const)('refuses %s %s with 403 api_key_not_allowed', async (method, url, body) => {
    const alice = await newUser(t);
    const { key } = await createKey(alice);
    const res = await t.request(method, url, { as: withKey(key), body });
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'api_key_not_allowed' });
    expect(await db().select().from(apiKeys)).toHaveLength(1);
  });
});

describe('what revokes keys', () => {
  it('a password change revokes every key of the user; the session that changed it keeps working', async () => {
    const alice = await newUser(t);
    const keys = [await createKey(alice), await createKey(alice, { read_only: true })];
    const res = await t.post('/auth/users/set_password/', { current_password: TEST_PASSWORD, new_password: 'another-long-secret' }, alice);
    expect(res.statusCode).toBe(204);
    for (const { key } of keys) expect((await t.get('/api/users/me/', withKey(key))).json().code).toBe('authentication_failed');
    expect((await t.get('/auth/api-keys/', alice)).json().count).toBe(0);
  });

  it('a password reset revokes every key of the user', async () => {
    const alice = await newUser(t);
    const { key } = await createKey(alice);
    const secret = randomToken();
    await usersRepo.insertPasswordReset(db(), alice.id, sha256Hex(secret), new Date(Date.now() + 60_000));
    const res = await t.post('/auth/users/reset_password_confirm/', { uid: String(alice.id), token: secret, new_password: 'another-long-secret' });
    expect(res.statusCode, res.body).toBe(204);
    expect((await t.get('/api/users/me/', withKey(key))).statusCode).toBe(403);
  });

  it('deleting the account deletes its keys', async () => {
    const alice = await newUser(t);
    const { key } = await createKey(alice);
    expect((await t.delete('/auth/users/me/', alice, { current_password: TEST_PASSWORD })).statusCode).toBe(204);
    expect((await t.get('/api/users/me/', withKey(key))).statusCode).toBe(403);
    expect(await db().select().from(apiKeys)).toEqual([]);
  });

  it('logging out a session does not revoke keys', async () => {
    const alice = await newUser(t);
    const { key } = await createKey(alice);
    expect((await t.post('/auth/token/logout/', {}, alice)).statusCode).toBe(204);
    expect((await t.get('/api/users/me/', withKey(key))).statusCode).toBe(200);
  });
});

describe('a read-only key', () => {
  it('reads, and gets 403 read_only_key on POST, PUT, PATCH and DELETE, changing nothing', async () => {
    const alice = await newUser(t);
    const ws = await newWorkspace(t, alice, 'Kept');
    const { key } = await createKey(alice, { read_only: true });
    const as = withKey(key);
    expect((await t.get(`/api/workspaces/${ws.id}/`, as)).statusCode).toBe(200);
    expect((await t.request('HEAD', `/api/workspaces/${ws.id}/`, { as })).statusCode).toBe(200);
    expect((await t.get(`/api/workspaces/${ws.id}/documents/`, as)).statusCode).toBe(200);
    for (const [method, url, body] of [
      ['POST', '/api/workspaces/', { name: 'New' }],
      ['PUT', `/api/workspaces/${ws.id}/`, { name: 'Renamed' }],
      ['PATCH', `/api/workspaces/${ws.id}/`, { name: 'Renamed' }],
      ['DELETE', `/api/workspaces/${ws.id}/`, undefined],
      ['POST', `/api/workspaces/${ws.id}/chats/`, { name: 'Chat' }],
      ['POST', `/api/workspaces/${ws.id}/documents/upload/`, { name: 'a.txt', content_type: 'text/plain', size: 5 }],
    ] as const) {
      const res = await t.request(method, url, { as, body });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(403);
      expect(res.json()).toEqual({ detail: expect.any(String), code: 'read_only_key' });
    }
    const rows = await db().select().from(workspaces);
    expect(rows.map((w) => w.name)).toEqual(['Kept']);
  });
});

describe('a key restricted to a workspace', () => {
  async function setup() {
    const [alice, bob] = [await newUser(t), await newUser(t)];
    const mine = await newWorkspace(t, alice, 'Mine');
    const other = await newWorkspace(t, alice, 'Other');
    // Alice is also a member of a workspace of Bob's.
    const bobs = await newWorkspace(t, bob, 'Bobs');
    await addMember(t, bobs, alice);
    const otherTeam = await newTeam(t, other, 'Elsewhere');
    const myTeam = await newTeam(t, mine, 'Here');
    const { key } = await createKey(alice, { workspace: mine.id });
    return { alice, mine, other, bobs, otherTeam, myTeam, as: withKey(key) };
  }

  it('is refused (403 api_key_workspace_denied) on paths, filters and bodies naming another workspace', async () => {
    const { other, bobs, as } = await setup();
    for (const [method, url, body] of [
      ['GET', `/api/workspaces/${other.id}/`, undefined],
      ['GET', `/api/workspaces/${bobs.id}/`, undefined],
      ['PATCH', `/api/workspaces/${other.id}/`, { name: 'Renamed' }],
      ['GET', `/api/workspaces/${other.id}/documents/`, undefined],
      ['GET', `/api/workspaces/${other.id}/chats/`, undefined],
      ['GET', `/api/workspaces/${other.id}/knowledge-bases/`, undefined],
      ['GET', `/api/workspaces/${other.id}/plan/`, undefined],
      ['GET', `/api/workspaces/${other.id}/invitations/`, undefined],
      ['POST', `/api/workspaces/${other.id}/leave/`, undefined],
      ['GET', `/api/teams/?workspace=${other.id}`, undefined],
      ['GET', `/api/workspacememberships/?workspace=${bobs.id}`, undefined],
      ['GET', `/api/teammemberships/?workspace=${other.id}`, undefined],
      ['POST', '/api/teams/', { workspace: other.id, name: 'Sneaky' }],
      ['POST', '/api/workspaces/', { name: 'Brand new' }],
      ['GET', '/api/invitations/', undefined],
    ] as const) {
      const res = await t.request(method, url, { as, body });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(403);
      expect(res.json(), `${method} ${url}`).toEqual({ detail: expect.any(String), code: 'api_key_workspace_denied' });
    }
  });

  it('holds over real connections whose bodies arrive later, interleaved with an unrestricted request', async () => {
    // The restriction lives in the request's async context, set before the body is read. A body
    // read from the socket later must still run in its own request's context: one lost would
    // leave the key unrestricted, one mixed up would give it another request's.
    const { alice, other, as } = await setup();
    const address = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' }));
    try {
      for (const first of ['key', 'session'] as const) {
        const key = postLater(address, '/api/teams/', as.token, { workspace: other.id, name: `By key, ${first} first` });
        const session = postLater(address, '/api/teams/', alice.token, { workspace: other.id, name: `By session, ${first} first` });
        await Promise.all([key.headersSent, session.headersSent]);
        // Both requests are being served (authenticated, waiting for their bodies) before either body is sent.
        await sleep(50);
        const [one, two] = first === 'key' ? [key, session] : [session, key];
        one.sendBody();
        await one.answer;
        two.sendBody();
        const [byKey, bySession] = await Promise.all([key.answer, session.answer]);
        expect(byKey.status, byKey.body).toBe(403);
        expect(JSON.parse(byKey.body)).toEqual({ detail: expect.any(String), code: 'api_key_workspace_denied' });
        expect(bySession.status, bySession.body).toBe(201);
      }
    } finally {
      t.app.server.closeAllConnections();
      await t.app.server.close();
    }
    const teams = (await t.get(`/api/teams/?workspace=${other.id}`, alice)).json();
    expect(teams.results.map((team: { name: string }) => team.name).sort()).toEqual(['By session, key first', 'By session, session first', 'Elsewhere']);
  });

  it('answers 404, as to a non-member, for objects of another workspace reached by their own id', async () => {
    const { otherTeam, as } = await setup();
    expect((await t.get(`/api/teams/${otherTeam.id}/`, as)).statusCode).toBe(404);
    expect((await t.patch(`/api/teams/${otherTeam.id}/`, { name: 'Renamed' }, as)).statusCode).toBe(404);
  });

  it('works in its workspace, and lists show only that workspace', async () => {
    const { alice, mine, myTeam, as } = await setup();
    expect((await t.get(`/api/workspaces/${mine.id}/`, as)).statusCode).toBe(200);
    expect((await t.get(`/api/workspaces/${mine.id}/documents/`, as)).statusCode).toBe(200);
    expect((await t.get(`/api/teams/?workspace=${mine.id}`, as)).statusCode).toBe(200);
    const created = await t.post('/api/teams/', { workspace: mine.id, name: 'Made by a key' }, as);
    expect(created.statusCode, created.body).toBe(201);
    expect((await t.patch(`/api/teams/${myTeam.id}/`, { description: 'ok' }, as)).statusCode).toBe(200);

    const listed = (await t.get('/api/workspaces/', as)).json();
    expect(listed.count).toBe(1);
    expect(listed.results.map((w: { id: string }) => w.id)).toEqual([mine.id]);
    expect((await t.get('/api/users/me/', as)).json().workspaces.map((w: { id: string }) => w.id)).toEqual([mine.id]);
    const memberships = (await t.get('/api/workspacememberships/', as)).json();
    expect(memberships.results.map((m: { workspace: string }) => m.workspace)).toEqual([mine.id]);
    expect((await t.get('/api/workspacememberships/mine/', as)).json().map((m: { workspace: string }) => m.workspace)).toEqual([
      mine.id,
    ]);
    const teams = (await t.get('/api/teams/', as)).json();
    expect(new Set(teams.results.map((team: { workspace: string }) => team.workspace))).toEqual(new Set([mine.id]));
    expect(teams.count).toBe(2);
    // The same account with its session token still sees everything.
    expect((await t.get('/api/workspaces/', alice)).json().count).toBe(3);
    expect((await t.get('/api/users/me/', alice)).json().workspaces).toHaveLength(3);
  });
});

/**
 * A JSON POST over its own connection, its headers sent at once and its body only when asked:
 * the body then reaches the server in a later read of the socket, as from a slow client.
 */
function postLater(base: URL, path: string, token: string, body: unknown) {
  const payload = JSON.stringify(body);
  const socket = net.connect(Number(base.port), base.hostname);
  const headersSent = new Promise<void>((resolve) =>
    socket.once('connect', () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nhost: ${base.host}\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(payload)}\r\nconnection: close\r\n\r\n`,
        () => resolve(),
      );
    }),
  );
  const answer = new Promise<RawResponse>((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', reject);
    socket.on('end', () => resolve(parseRawResponse(text)));
  });
  return { headersSent, answer, sendBody: () => socket.write(payload) };
}
