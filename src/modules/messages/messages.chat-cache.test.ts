import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { queryRows } from '../../db/client.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, forgetCachedAccess, type TestApp } from '../../../test/support/app.js';
import { chatWorld, injectStream, useChatTestApp } from '../../../test/support/chat.js';
import { createKb } from '../../../test/support/documents.js';
import { waitUntil } from '../../../test/support/wait.js';

/**
 * The chat a send reads (row, shares) and whether it has knowledge come from per-process caches
 * (chats' loadChat with a cache, the knowledge search's): two API instances of one deployment, as
 * in platform/cache/access-cache.test.ts. A change made through one instance reaches the other's
 * sends within a second, far below the TTL, so only the invalidation message can make it.
 */
const { t: a, fake } = useChatTestApp();
let b: TestApp;

beforeAll(async () => {
  const env = { ...fake.env, THROTTLE_CHAT_MESSAGES: '10000/minute' };
  b = process.env.TEST_REDIS_URL
    ? await createTestApp({ ...env, REDIS_PREFIX: a.config.REDIS_PREFIX }, {}, { startWorker: false })
    : await createTestApp(env, { pubsub: a.deps.pubsub }, { startWorker: false });
});
afterAll(async () => {
  await b?.close();
});
beforeEach(() => forgetCachedAccess(b));

/** Polls `probe` for at most a second until `ok` holds. */
const within1s = async <R>(probe: () => Promise<R>, ok: (value: R) => boolean): Promise<void> => {
  // Wrapped: waitUntil takes `false` for "not yet", and `false` may be the awaited answer.
  await waitUntil(async () => (ok(await probe()) ? { met: true } : undefined), 1000);
};

/** A refusal as JSON: 404 for a chat the caller cannot see (any more). */
function expectNotFound(res: { statusCode: number; json(): unknown }) {
  expect(res.statusCode).toBe(404);
  expect(res.json()).toMatchObject({ code: 'not_found' });
}

const lastModelCall = () => fake.requestsTo('openai.chat').at(-1)!.body as { messages: Array<{ role: string; content: unknown }>; tools?: unknown[] };
const systemPrompt = () => lastModelCall().messages.find((m) => m.role === 'system')?.content;

describe('a send reads its chat from the cache, dropped by every change of the chat', () => {
  it('a warmed instance answers from memory: a change made behind the service, by SQL, is not seen until forgotten', async () => {
    const w = await chatWorld(a, { system_prompt: 'Before' });
    expect((await injectStream(b, `${w.base}stream/`, { content: 'Warm' }, w.alice)).res.statusCode).toBe(200);
    await a.deps.database.db.execute(sql`UPDATE chat_sessions SET system_prompt = 'Behind' WHERE id = ${w.chat.id}`);
    expect((await injectStream(b, `${w.base}stream/`, { content: 'Cached' }, w.alice)).res.statusCode).toBe(200);
    expect(systemPrompt()).toBe('Before');
    forgetCachedAccess(b);
    expect((await injectStream(b, `${w.base}stream/`, { content: 'Read again' }, w.alice)).res.statusCode).toBe(200);
    expect(systemPrompt()).toBe('Behind');
  });

  it('settings changed on one instance: the next send on the other uses them within a second', async () => {
    const w = await chatWorld(a, { system_prompt: 'Old prompt' });
    expect((await injectStream(b, `${w.base}stream/`, { content: 'Warm' }, w.alice)).res.statusCode).toBe(200);
    expect(systemPrompt()).toBe('Old prompt');
    const updated = await a.patch(`/api/workspaces/${w.ws.id}/chats/${w.chat.id}/`, { system_prompt: 'New prompt' }, w.alice);
    expect(updated.statusCode).toBe(200);
    expect((await injectStream(a, `${w.base}stream/`, { content: 'Here' }, w.alice)).res.statusCode).toBe(200);
    expect(systemPrompt()).toBe('New prompt');
    await within1s(
      async () => (await injectStream(b, `${w.base}stream/`, { content: 'There' }, w.alice), systemPrompt()),
      (prompt) => prompt === 'New prompt',
    );
  });

  it('a share revoked on one instance: the former sharee is refused with 404 there at once and on the other within a second', async () => {
    const w = await chatWorld(a);
    for (const app of [a, b]) expect((await injectStream(app, `${w.base}stream/`, { content: 'Warm' }, w.bob)).res.statusCode).toBe(200);
    const revoked = await a.post(`/api/workspaces/${w.ws.id}/chats/${w.chat.id}/revoke-share/`, { email: w.bob.email }, w.alice);
    expect(revoked.statusCode).toBe(204);
    const calls = fake.requests.length;
    expectNotFound(await a.post(`${w.base}stream/`, { content: 'Again' }, w.bob));
    await within1s(() => b.post(`${w.base}stream/`, { content: 'Again' }, w.bob), (res) => res.statusCode === 404);
    expect(fake.requests).toHaveLength(calls);
  });

  it('a chat deleted while another instance still has it cached: that instance answers 404, stores and holds nothing', async () => {
    const w = await chatWorld(a);
    expect((await injectStream(b, `${w.base}stream/`, { content: 'Warm' }, w.alice)).res.statusCode).toBe(200);
    // Deleted behind the service: no invalidation reaches b, whose entry still has the chat.
    await a.deps.database.db.execute(sql`DELETE FROM chat_sessions WHERE id = ${w.chat.id}`);
    const calls = fake.requests.length;
    expectNotFound(await b.post(`${w.base}stream/`, { content: 'Into the void' }, w.alice));
    expectNotFound(await b.post(w.base, { content: 'Into the void' }, w.alice));
    // A multipart send stores its file before the message: the file goes again, the hold is given back.
    const body = new FormData();
    body.append('content', 'With a file');
    body.append('files', new Blob(['notes'], { type: 'text/plain' }), 'notes.txt');
    expectNotFound(await b.request('POST', `${w.base}stream/`, { as: w.alice, body }));
    const attachments = path.join(b.config.DATA_DIR, 'files', 'workspaces', w.ws.id, 'chats', w.chat.id, 'attachments');
    const files = existsSync(attachments) ? readdirSync(attachments, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()) : [];
    expect(files.map((e) => e.name)).toEqual([]);
    expect(fake.requests).toHaveLength(calls);
    expect(await queryRows(a.deps.database.db, sql`SELECT id FROM credit_reservations WHERE closed_at IS NULL`)).toEqual([]);
  });

  it('a public chat made private on one instance: a member who is not a sharee can no longer read it on the other within a second', async () => {
    const w = await chatWorld(a, { isPublic: true });
    expect((await injectStream(a, `${w.base}stream/`, { content: 'Hello' }, w.alice)).res.statusCode).toBe(200);
    // Carol (a member, not a sharee) reads the public chat's messages on b: cached there.
    expect((await b.get(w.base, w.carol)).statusCode).toBe(200);
    const toggled = await a.post(`/api/workspaces/${w.ws.id}/chats/${w.chat.id}/toggle-public/`, {}, w.alice);
    expect(toggled.json().is_public).toBe(false);
    expectNotFound(await a.get(w.base, w.carol));
    await within1s(() => b.get(w.base, w.carol), (res) => res.statusCode === 404);
  });

  it('a knowledge base deleted on one instance: the other stops offering the search tool within a second', async () => {
    const w = await chatWorld(a, { agent_framework: 'tools' });
    const kb = await createKb(a, w.ws.id, w.alice);
    expect((await a.post(`/api/workspaces/${w.ws.id}/chats/${w.chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: [kb.id] }, w.alice)).statusCode).toBe(200);
    const offered = async (app: TestApp) => (await injectStream(app, `${w.base}stream/`, { content: 'Ask' }, w.alice), 'tools' in lastModelCall());
    expect(await offered(b)).toBe(true);
    expect((await a.delete(`/api/workspaces/${w.ws.id}/knowledge-bases/${kb.id}/`, w.alice)).statusCode).toBe(204);
    expect(await offered(a)).toBe(false);
    await within1s(() => offered(b), (tools) => !tools);
  });

  it('knowledge attached and detached on one instance: the other offers the search tool within a second, then no longer', async () => {
    const w = await chatWorld(a, { agent_framework: 'tools' });
    expect((await injectStream(b, `${w.base}stream/`, { content: 'Warm' }, w.alice)).res.statusCode).toBe(200);
    expect(lastModelCall()).not.toHaveProperty('tools');
    const kb = await createKb(a, w.ws.id, w.alice);
    const links = `/api/workspaces/${w.ws.id}/chats/${w.chat.id}/knowledge-bases/`;
    expect((await a.post(`${links}attach/`, { knowledge_base_ids: [kb.id] }, w.alice)).statusCode).toBe(200);
    const offered = async (app: TestApp) => (await injectStream(app, `${w.base}stream/`, { content: 'Ask' }, w.alice), 'tools' in lastModelCall());
    expect(await offered(a)).toBe(true);
    await within1s(() => offered(b), (tools) => tools);
    expect((await a.post(`${links}detach/`, { knowledge_base_ids: [kb.id] }, w.alice)).statusCode).toBe(200);
    expect(await offered(a)).toBe(false);
    await within1s(() => offered(b), (tools) => !tools);
  });
});
