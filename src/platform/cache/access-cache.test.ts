import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, forgetCachedAccess, type TestApp, useTestApp } from '../../../test/support/app.js';
import { addMember, newUser, newWorkspace } from '../../../test/support/factories.js';
import { waitUntil } from '../../../test/support/wait.js';
import * as usersRepo from '../../modules/users/users.repo.js';
import { authTokens } from '../../modules/users/users.table.js';
import { workspaceMemberships } from '../../modules/workspaces/workspaces.table.js';
import { randomToken, sha256Hex } from '../secrets.js';
import { startTracing } from '../tracing.js';

/**
 * The access cache (docs/decisions.md, "Auth and membership cache") over HTTP, with two API
 * instances of one deployment: the same database and the same pub/sub (on the PostgreSQL+Redis
 * profile the same REDIS_PREFIX; embedded, the one in-process bus, passed to the second app).
 * Each instance's cache is warmed by a request; a change made through one must be refused on
 * the other within a second, far below the TTL (5 s by default), so only the invalidation
 * message can make it.
 */
const a = useTestApp();
let b: TestApp;

beforeAll(async () => {
  b = process.env.TEST_REDIS_URL
    ? await createTestApp({ REDIS_PREFIX: a.config.REDIS_PREFIX }, {}, { startWorker: false })
    : await createTestApp({}, { pubsub: a.deps.pubsub }, { startWorker: false });
});
afterAll(async () => {
  await b?.close();
});
beforeEach(() => forgetCachedAccess(b));

/** Polls `probe` for at most a second until it answers `status`. */
async function within1s<R extends { statusCode: number }>(probe: () => Promise<R>, status: number): Promise<R> {
  return waitUntil(async () => {
    const res = await probe();
    return res.statusCode === status ? res : undefined;
  }, 1000);
}

async function world() {
  const alice = await newUser(a);
  const bob = await newUser(a);
  const ws = await newWorkspace(a, alice);
  const membershipId = await addMember(a, ws, bob, 'admin');
  return { alice, bob, ws, membershipId };
}

describe('the cached chat list follows every change, on both instances within a second', () => {
  /** Polls `read` for at most a second until `ok` holds. */
  const within1sThat = <R>(read: () => Promise<R>, ok: (value: R) => boolean) =>
    waitUntil(async () => {
      const value = await read();
      return ok(value) ? value : undefined;
    }, 1000);

  it('a new chat, a share, a revoked share, a rename, a deletion and a new reply', async () => {
    const { alice, bob, ws } = await world();
    const names = async (app: TestApp) => {
      const res = await app.get(`/api/workspaces/${ws.id}/chats/`, bob);
      expect(res.statusCode).toBe(200);
      return (res.json().results as Array<{ name: string }>).map((chat) => chat.name);
    };
    const own = (await a.post(`/api/workspaces/${ws.id}/chats/`, { name: 'Bob own' }, bob)).json() as { id: string };
    expect(await names(b)).toEqual(['Bob own']);
    expect(await names(a)).toEqual(['Bob own']);

    const secret = (await a.post(`/api/workspaces/${ws.id}/chats/`, { name: 'Alice private' }, alice)).json() as { id: string };
    expect(await names(a)).toEqual(['Bob own']);
    expect((await a.post(`/api/workspaces/${ws.id}/chats/${secret.id}/share/`, { email: bob.email }, alice)).statusCode).toBe(201);
    expect(await names(a)).toEqual(['Alice private', 'Bob own']);
    await within1sThat(() => names(b), (list) => list.includes('Alice private'));

    // Revoked: gone from the list on both at once (no stale entry keeps showing it).
    expect((await a.post(`/api/workspaces/${ws.id}/chats/${secret.id}/revoke-share/`, { email: bob.email }, alice)).statusCode).toBe(204);
    expect(await names(a)).toEqual(['Bob own']);
    await within1sThat(() => names(b), (list) => !list.includes('Alice private'));

    expect((await a.patch(`/api/workspaces/${ws.id}/chats/${own.id}/`, { name: 'Bob renamed' }, bob)).statusCode).toBe(200);
    await within1sThat(() => names(b), (list) => list[0] === 'Bob renamed');
    expect((await a.delete(`/api/workspaces/${ws.id}/chats/${own.id}/`, bob)).statusCode).toBe(204);
    await within1sThat(() => names(b), (list) => list.length === 0);
  });
});

describe('a change made through one instance reaches the other within a second', () => {
  it('membership removed: the removed member is refused', async () => {
    const { alice, bob, ws, membershipId } = await world();
    const list = (app: TestApp) => app.get(`/api/workspaces/${ws.id}/chats/`, bob);
    expect((await list(b)).statusCode).toBe(200);
    expect((await list(b)).statusCode).toBe(200);
    expect((await list(a)).statusCode).toBe(200);

    expect((await a.delete(`/api/workspacememberships/${membershipId}/`, alice)).statusCode).toBe(204);
    expect((await list(a)).statusCode).toBe(403);
    expect((await within1s(() => list(b), 403)).json().code).toBe('not_workspace_member');
  });

  it('role changed: an admin made member loses an admin-only action', async () => {
    const { alice, bob, ws, membershipId } = await world();
    const invitations = (app: TestApp) => app.get(`/api/workspaces/${ws.id}/invitations/`, bob);
    expect((await invitations(b)).statusCode).toBe(200);
    expect((await invitations(a)).statusCode).toBe(200);

    expect((await a.patch(`/api/workspacememberships/${membershipId}/`, { role: 'member' }, alice)).statusCode).toBe(200);
    expect((await invitations(a)).statusCode).toBe(403);
    await within1s(() => invitations(b), 403);
    // Still a member: reads go on.
    expect((await b.get(`/api/workspaces/${ws.id}/chats/`, bob)).statusCode).toBe(200);
  });

  it('token revoked (logout): the token is refused', async () => {
    const { bob } = await world();
    expect((await b.get('/auth/users/me/', bob)).statusCode).toBe(200);
    expect((await a.get('/auth/users/me/', bob)).statusCode).toBe(200);

    expect((await a.post('/auth/token/logout/', {}, bob)).statusCode).toBe(204);
    expect((await a.get('/auth/users/me/', bob)).statusCode).toBe(403);
    expect((await within1s(() => b.get('/auth/users/me/', bob), 403)).json().code).toBe('authentication_failed');
  });

  it('password changed: the other sessions of the user are refused', async () => {
    const { bob } = await world();
    const other = { token: randomToken() };
    await usersRepo.insertToken(a.deps.database.db, bob.id, sha256Hex(other.token), new Date(Date.now() + 3600_000));
    expect((await b.get('/auth/users/me/', other)).statusCode).toBe(200);

    const change = await a.post('/auth/users/set_password/', { current_password: bob.password, new_password: 'another-horse-battery' }, bob);
    expect(change.statusCode).toBe(204);
    await within1s(() => b.get('/auth/users/me/', other), 403);
    // The session that changed it stays signed in.
    expect((await b.get('/auth/users/me/', bob)).statusCode).toBe(200);
  });

  it('API key revoked: the key is refused', async () => {
    const { bob } = await world();
    const created = await a.post('/auth/api-keys/', { name: 'CI' }, bob);
    expect(created.statusCode).toBe(201);
    const { id, key } = created.json() as { id: string; key: string };
    expect((await b.get('/api/users/me/', { token: key })).statusCode).toBe(200);
    expect((await a.get('/api/users/me/', { token: key })).statusCode).toBe(200);

    expect((await a.delete(`/auth/api-keys/${id}/`, bob)).statusCode).toBe(204);
    expect((await a.get('/api/users/me/', { token: key })).statusCode).toBe(403);
    await within1s(() => b.get('/api/users/me/', { token: key }), 403);
  });

  it('workspace archived: writes answer 409 workspace_archived, reads go on', async () => {
    const { alice, ws } = await world();
    const createTeam = (app: TestApp) => app.post('/api/teams/', { workspace: ws.id, name: `Team ${randomToken(4)}` }, alice);
    expect((await createTeam(b)).statusCode).toBe(201);
    expect((await createTeam(a)).statusCode).toBe(201);

    expect((await a.patch(`/api/workspaces/${ws.id}/`, { status: 'archived' }, alice)).statusCode).toBe(200);
    expect((await createTeam(a)).statusCode).toBe(409);
    expect((await within1s(() => createTeam(b), 409)).json().code).toBe('workspace_archived');
    expect((await b.get(`/api/workspaces/${ws.id}/`, alice)).json().status).toBe('archived');
  });

  it('ownership transferred: the new owner is the owner on the other instance', async () => {
    const { alice, bob, ws } = await world();
    expect((await b.get(`/api/workspaces/${ws.id}/`, bob)).json().owner).toBe(alice.id);
    const transfer = await a.post(`/api/workspaces/${ws.id}/transfer-ownership/`, { user: bob.id }, alice);
    expect(transfer.statusCode, transfer.body).toBe(200);
    await waitUntil(async () => (await b.get(`/api/workspaces/${ws.id}/`, bob)).json().owner === bob.id, 1000);
  });
});

describe('what the cache serves', () => {
  it('a warmed instance answers from memory (a change made behind the service, by SQL, is not seen until forgotten)', async () => {
    const { bob, ws } = await world();
    expect((await b.get(`/api/workspaces/${ws.id}/chats/`, bob)).statusCode).toBe(200);
    await a.deps.database.db.delete(authTokens).where(eq(authTokens.userId, bob.id));
    await a.deps.database.db.delete(workspaceMemberships).where(eq(workspaceMemberships.userId, bob.id));
    // Served from memory: neither the token nor the membership exists any more.
    expect((await b.get(`/api/workspaces/${ws.id}/chats/`, bob)).statusCode).toBe(200);
    forgetCachedAccess(b);
    expect((await b.get(`/api/workspaces/${ws.id}/chats/`, bob)).statusCode).toBe(403);
  });

  it('a token stops working at its expiry even while cached', async () => {
    const { bob } = await world();
    const short = { token: randomToken() };
    await usersRepo.insertToken(a.deps.database.db, bob.id, sha256Hex(short.token), new Date(Date.now() + 1200));
    expect((await b.get('/auth/users/me/', short)).statusCode).toBe(200);
    await waitUntil(async () => (await b.get('/auth/users/me/', short)).statusCode === 403, 3000);
  });

  it('unknown tokens are not cached: a token inserted after a refusal works at once', async () => {
    const { bob } = await world();
    const late = { token: randomToken() };
    expect((await b.get('/auth/users/me/', late)).statusCode).toBe(403);
    await usersRepo.insertToken(a.deps.database.db, bob.id, sha256Hex(late.token), new Date(Date.now() + 3600_000));
    expect((await b.get('/auth/users/me/', late)).statusCode).toBe(200);
  });

  it('ACCESS_CACHE_ENABLED=false: every request reads the database', async () => {
    const off = await createTestApp({ ACCESS_CACHE_ENABLED: 'false' }, {}, { startWorker: false });
    try {
      const { bob, ws } = await world();
      expect((await off.get(`/api/workspaces/${ws.id}/chats/`, bob)).statusCode).toBe(200);
      await a.deps.database.db.delete(workspaceMemberships).where(eq(workspaceMemberships.userId, bob.id));
      expect((await off.get(`/api/workspaces/${ws.id}/chats/`, bob)).statusCode).toBe(403);
    } finally {
      await off.close();
    }
  });
});

describe('statements per request (tracing on, in-memory exporter)', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: ReturnType<typeof startTracing>;
  // Its own app: request spans are installed when an app is built with tracing on.
  let traced: TestApp;
  beforeAll(async () => {
    tracing = startTracing({ serviceName: 'workspace-ai-test', exporter });
    traced = await createTestApp({}, {}, { startWorker: false });
  });
  afterAll(async () => {
    await traced?.close();
    await tracing?.shutdown();
  });

  /** The SQL statements run for one request. */
  async function statementsOf(app: TestApp, url: string, as: { token: string }) {
    exporter.reset();
    const res = await app.get(url, as);
    expect(res.statusCode).toBe(200);
    const spans = exporter.getFinishedSpans();
    const server = spans.find((s) => s.name === 'GET /api/workspaces/:ws/chats/');
    expect(server).toBeDefined();
    return spans
      .filter((s) => s.spanContext().traceId === server!.spanContext().traceId && s.attributes['db.system.name'] === 'postgresql')
      .map((s) => String(s.attributes['db.query.text']));
  }

  it('a repeated chat list runs no statement (token, membership and the page come from the caches)', async () => {
    const { bob, ws } = await world();
    const url = `/api/workspaces/${ws.id}/chats/`;
    const first = await statementsOf(traced, url, bob);
    const second = await statementsOf(traced, url, bob);
    const reads = (texts: string[], table: string) => texts.filter((text) => text.includes(`from "${table}"`)).length;
    expect(reads(first, 'auth_tokens')).toBe(1);
    expect(reads(first, 'workspace_memberships')).toBeGreaterThanOrEqual(1);
    expect(reads(second, 'auth_tokens')).toBe(0);
    expect(second).toEqual([]);
  });
});
