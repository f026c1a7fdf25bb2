import { request as httpRequest } from 'node:http';
import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp } from '../../../test/support/app.js';
import { chatWorld, ledgerRows, listenUrl, messageRows, useChatTestApp } from '../../../test/support/chat.js';
import { waitUntil } from '../../../test/support/wait.js';
import { docsBase, type LocalSite, LIFTED_THROTTLES, send, startLocalSite } from '../../../test/support/documents.js';
import { addMember, newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { agentTasks } from '../../modules/messages/messages.table.js';
import { documents, ingestionTasks } from '../../modules/documents/documents.table.js';
import { canonicalJson, deleteExpiredIdempotencyKeys, requestFingerprint } from './idempotency.js';
import { idempotencyKeys } from './idempotency.table.js';

/*
 * Idempotency-Key on the three endpoints that take it (from-url/, upload/ and the non-streamed
 * message send), through the real app and database; models are the fake model server, web pages
 * a local site.
 */

let site: LocalSite;
beforeAll(async () => {
  site = await startLocalSite();
  site.routes.set('/page', send(200, '<html><head><title>Tides</title></head><body><p>A page about tide pools and their life.</p></body></html>'));
});
afterAll(async () => {
  await site?.close();
});

const { t, fake } = useChatTestApp({ ...LIFTED_THROTTLES, URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32' });

// Imports fetch in the background: let them finish before the next test empties the tables.
afterEach(async () => {
  await t.deps.queue.drain();
});

const db = () => t.deps.database.db;
const documentCount = async () => (await db().select().from(documents)).length;
const taskCount = async () => (await db().select().from(ingestionTasks)).length;
const keyRows = () => db().select().from(idempotencyKeys);
const keyRow = async (userId: number, key: string) =>
  (await db().select().from(idempotencyKeys).where(and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.key, key))))[0];
const setKeyRow = (userId: number, key: string, values: Partial<typeof idempotencyKeys.$inferInsert>) =>
  db().update(idempotencyKeys).set(values).where(and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.key, key)));

function post(url: string, body: unknown, as: TestUser, key?: string, query?: Record<string, string>) {
  return t.request('POST', url, { as, body, headers: key === undefined ? {} : { 'idempotency-key': key }, ...(query ? { query } : {}) });
}

const replayed = (res: LightMyRequestResponse) => res.headers['idempotent-replayed'];

/** The same answer: status, the stored headers and the body byte for byte. */
function expectSameAnswer(first: LightMyRequestResponse, again: LightMyRequestResponse) {
  expect(again.statusCode).toBe(first.statusCode);
  expect(again.body).toBe(first.body);
  expect(again.headers['content-type']).toBe(first.headers['content-type']);
}

async function docsWorld() {
  const alice = await newUser(t);
  const bob = await newUser(t);
  const ws = await newWorkspace(t, alice);
  await addMember(t, ws, bob);
  return { alice, bob, ws, base: docsBase(ws.id) };
}

const page = () => ({ url: `${site.url}/page` });
const uploadBody = (overrides: Record<string, unknown> = {}) => ({ name: 'notes.txt', content_type: 'text/plain', size: 100, ...overrides });

describe('replay', () => {
  it('from-url/: the same key and body answer the first 202 again without a second document, task or fetch', async () => {
    const { alice, base } = await docsWorld();
    const first = await post(`${base}from-url/`, page(), alice, 'import-1');
    expect(first.statusCode, first.body).toBe(202);
    expect(replayed(first)).toBeUndefined();
    await t.deps.queue.drain();
    const fetches = site.hits.length;

    const again = await post(`${base}from-url/`, page(), alice, 'import-1');
    expectSameAnswer(first, again);
    expect(replayed(again)).toBe('true');
    expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    await t.deps.queue.drain();
    expect(await documentCount()).toBe(1);
    expect(await taskCount()).toBe(1);
    expect(site.hits.length).toBe(fetches);
    expect(await keyRow(alice.id, 'import-1')).toMatchObject({ state: 'completed', responseStatus: 202, responseBody: first.body });
  });

  it('upload/: the same key and body answer the first 201 (same document, same upload URL) and create nothing', async () => {
    const { alice, base } = await docsWorld();
    const first = await post(`${base}upload/`, uploadBody(), alice, 'upload-1');
    expect(first.statusCode, first.body).toBe(201);
    // Key order and whitespace do not matter: the parsed body is compared.
    const again = await t.request('POST', `${base}upload/`, {
      as: alice,
      body: '{ "size": 100, "content_type": "text/plain",   "name": "notes.txt" }',
      headers: { 'idempotency-key': 'upload-1', 'content-type': 'application/json' },
    });
    expectSameAnswer(first, again);
    expect(replayed(again)).toBe('true');
    expect(again.json().upload.url).toBe(first.json().upload.url);
    expect(await documentCount()).toBe(1);
  });

  it('message send: the same key and body answer the first 201 without a model call, message or charge', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'The only answer', usage: { inputTokens: 3, outputTokens: 3 } });
    const first = await post(w.base, { content: 'Once please' }, w.alice, 'send-1');
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json()).toMatchObject({ role: 'assistant', content: 'The only answer' });

    const again = await post(w.base, { content: 'Once please' }, w.alice, 'send-1');
    expectSameAnswer(first, again);
    expect(replayed(again)).toBe('true');
    expect(fake.requestsTo('openai.chat')).toHaveLength(1);
    expect((await messageRows(t, w.chat.id)).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(await ledgerRows(t, w.ws.id)).toHaveLength(1);
  });

  it('multipart message send: the body is not compared, so the same key replays even with other parts', async () => {
    const w = await chatWorld(t);
    const form = (content: string) => {
      const body = new FormData();
      body.append('content', content);
      body.append('files', new Blob(['a,b\n1,2'], { type: 'text/csv' }), 'data.csv');
      return body;
    };
    const first = await t.request('POST', w.base, { as: w.alice, body: form('Read this'), headers: { 'idempotency-key': 'mp-1' } });
    expect(first.statusCode, first.body).toBe(201);
    const again = await t.request('POST', w.base, { as: w.alice, body: form('Something else'), headers: { 'idempotency-key': 'mp-1' } });
    expectSameAnswer(first, again);
    expect(replayed(again)).toBe('true');
    expect(fake.requestsTo('openai.chat')).toHaveLength(1);
    expect(await messageRows(t, w.chat.id)).toHaveLength(2);

    // A JSON body under the same key is another request.
    const json = await post(w.base, { content: 'Read this' }, w.alice, 'mp-1');
    expect(json.statusCode).toBe(409);
    expect(json.json().code).toBe('idempotency_key_reused');
  });

  it('AGENT_ASYNC_ENABLED: the replayed 202 names the same agent task, and no second task is queued', async () => {
    const app = await createTestApp({ ...fake.env, AGENT_ASYNC_ENABLED: 'true', THROTTLE_CHAT_MESSAGES: '10000/minute' });
    try {
      const w = await chatWorld(app);
      const send = () => app.request('POST', w.base, { as: w.alice, body: { content: 'Later' }, headers: { 'idempotency-key': 'async-1' } });
      const first = await send();
      expect(first.statusCode, first.body).toBe(202);
      const again = await send();
      expectSameAnswer(first, again);
      expect(replayed(again)).toBe('true');
      await app.deps.queue.drain();
      const tasks = await app.deps.database.db.select().from(agentTasks).where(eq(agentTasks.sessionId, w.chat.id));
      expect(tasks.map((task) => task.id)).toEqual([first.json().agent_task_id]);
      expect(fake.requestsTo('openai.chat')).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});

describe('a key used for another request', () => {
  it('another body under the same key is 409 idempotency_key_reused and changes nothing', async () => {
    const { alice, base } = await docsWorld();
    const first = await post(`${base}from-url/`, page(), alice, 'k');
    expect(first.statusCode).toBe(202);
    const other = await post(`${base}from-url/`, { url: `${site.url}/page?other=1` }, alice, 'k');
    expect(other.statusCode).toBe(409);
    expect(other.json()).toEqual({ detail: expect.any(String), code: 'idempotency_key_reused' });
    expect(replayed(other)).toBeUndefined();

    // The query string and the endpoint are part of the request too.
    const withQuery = await post(`${base}from-url/`, page(), alice, 'k', { source: 'retry' });
    expect(withQuery.json().code).toBe('idempotency_key_reused');
    const otherEndpoint = await post(`${base}upload/`, uploadBody(), alice, 'k');
    expect(otherEndpoint.json().code).toBe('idempotency_key_reused');

    expect(await documentCount()).toBe(1);
    expect((await keyRow(alice.id, 'k'))!.responseBody).toBe(first.body);
  });

  it('message send: another content under the same key is 409 and calls no model', async () => {
    const w = await chatWorld(t);
    expect((await post(w.base, { content: 'First' }, w.alice, 'chat-key')).statusCode).toBe(201);
    const other = await post(w.base, { content: 'Second' }, w.alice, 'chat-key');
    expect(other.statusCode).toBe(409);
    expect(other.json().code).toBe('idempotency_key_reused');
    expect(fake.requests).toHaveLength(1);
    expect(await messageRows(t, w.chat.id)).toHaveLength(2);
  });

  it('keys belong to a user: another user with the same key and body does the work for themselves', async () => {
    const { alice, bob, base } = await docsWorld();
    const mine = await post(`${base}upload/`, uploadBody(), alice, 'shared-key');
    const theirs = await post(`${base}upload/`, uploadBody(), bob, 'shared-key');
    expect(mine.statusCode).toBe(201);
    expect(theirs.statusCode).toBe(201);
    expect(replayed(theirs)).toBeUndefined();
    expect(theirs.json().document.id).not.toBe(mine.json().document.id);
    expect(theirs.json().document.uploaded_by).toBe(bob.id);
    expect(await documentCount()).toBe(2);
    // Bob may even use it for another body.
    expect((await post(`${base}from-url/`, page(), bob, 'alice-only')).statusCode).toBe(202);
    expect((await post(`${base}upload/`, uploadBody(), alice, 'alice-only')).statusCode).toBe(201);
  });
});

describe('concurrent duplicates', () => {
  it('five identical from-url/ requests at once: one document, five identical answers, four replays', async () => {
    const { alice, base } = await docsWorld();
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(`${base}from-url/`, page(), alice, 'burst')));
    expect(answers.map((a) => a.statusCode)).toEqual([202, 202, 202, 202, 202]);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.filter((a) => replayed(a) === 'true')).toHaveLength(4);
    expect(await documentCount()).toBe(1);
    expect(await taskCount()).toBe(1);
  });

  it('five identical message sends at once (slow model): one model call, one reply, five identical answers', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Slowly', delayMs: 400 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(w.base, { content: 'Hurry' }, w.alice, 'burst-chat')));
    expect(answers.map((a) => a.statusCode)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.filter((a) => replayed(a) === 'true')).toHaveLength(4);
    expect(fake.requestsTo('openai.chat')).toHaveLength(1);
    expect(await messageRows(t, w.chat.id)).toHaveLength(2);
  });

  it('a duplicate waits for the first request and replays its response once it completes', async () => {
    const { alice, base } = await docsWorld();
    const first = await post(`${base}upload/`, uploadBody(), alice, 'wait');
    const stored = (await keyRow(alice.id, 'wait'))!;
    // As if the first request were still running.
    await setKeyRow(alice.id, 'wait', { state: 'in_progress', responseStatus: null, responseBody: null, responseHeaders: null, updatedAt: new Date() });
    const waiting = post(`${base}upload/`, uploadBody(), alice, 'wait');
    await new Promise((r) => setTimeout(r, 300));
    await setKeyRow(alice.id, 'wait', {
      state: 'completed',
      responseStatus: stored.responseStatus,
      responseHeaders: stored.responseHeaders,
      responseBody: stored.responseBody,
    });
    const again = await waiting;
    expectSameAnswer(first, again);
    expect(replayed(again)).toBe('true');
    expect(await documentCount()).toBe(1);
  });

  it('a duplicate whose first request fails meanwhile runs itself', async () => {
    const { alice, base } = await docsWorld();
    await post(`${base}upload/`, uploadBody(), alice, 'fails');
    await setKeyRow(alice.id, 'fails', { state: 'in_progress', responseStatus: null, responseBody: null, responseHeaders: null, updatedAt: new Date() });
    const waiting = post(`${base}upload/`, uploadBody(), alice, 'fails');
    await new Promise((r) => setTimeout(r, 300));
    // The first request failed: its claim is released.
    await db().delete(idempotencyKeys).where(eq(idempotencyKeys.key, 'fails'));
    const res = await waiting;
    expect(res.statusCode, res.body).toBe(201);
    expect(replayed(res)).toBeUndefined();
    expect(await documentCount()).toBe(2);
    expect(await keyRow(alice.id, 'fails')).toMatchObject({ state: 'completed', responseBody: res.body });
  });

  it('a duplicate of a request still running after 10 s gets 409 idempotency_request_in_progress with Retry-After', async () => {
    const { alice, base } = await docsWorld();
    await post(`${base}upload/`, uploadBody(), alice, 'slow');
    await setKeyRow(alice.id, 'slow', { state: 'in_progress', responseStatus: null, responseBody: null, responseHeaders: null, updatedAt: new Date() });
    const started = Date.now();
    const res = await post(`${base}upload/`, uploadBody(), alice, 'slow');
    expect(Date.now() - started).toBeGreaterThanOrEqual(9_900);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'idempotency_request_in_progress' });
    expect(res.headers['retry-after']).toBe('1');
    expect(await documentCount()).toBe(1);
    // Another body is refused at once, without waiting.
    const other = await post(`${base}upload/`, uploadBody({ name: 'other.txt' }), alice, 'slow');
    expect(other.json().code).toBe('idempotency_key_reused');
  }, 20_000);

  it('a claim abandoned for over 5 minutes (a crashed process) is taken over', async () => {
    const { alice, base } = await docsWorld();
    await post(`${base}upload/`, uploadBody(), alice, 'crashed');
    await setKeyRow(alice.id, 'crashed', {
      state: 'in_progress',
      responseStatus: null,
      responseBody: null,
      responseHeaders: null,
      updatedAt: new Date(Date.now() - 6 * 60_000),
    });
    const res = await post(`${base}upload/`, uploadBody({ name: 'retried.txt' }), alice, 'crashed');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().document.name).toBe('retried.txt');
    expect(await documentCount()).toBe(2);
  });
});

describe('failures and expiry', () => {
  it('a 402 does not keep the key: the corrected request with the same key succeeds', async () => {
    const { alice, ws, base } = await docsWorld();
    const tooBig = await post(`${base}upload/`, uploadBody({ size: t.deps.plans.free.max_file_size_bytes + 1 }), alice, 'fix-me');
    expect(tooBig.statusCode).toBe(402);
    expect(tooBig.json().code).toBe('file_too_large');
    expect(await keyRows()).toEqual([]);
    const fixed = await post(`${base}upload/`, uploadBody(), alice, 'fix-me');
    expect(fixed.statusCode, fixed.body).toBe(201);
    expect(replayed(fixed)).toBeUndefined();
    expect(fixed.json().document.workspace).toBe(ws.id);
    expect(await documentCount()).toBe(1);
  });

  it('a 400 from the service or from validation does not keep the key either', async () => {
    const { alice, base } = await docsWorld();
    const unknownKb = await post(`${base}upload/`, uploadBody({ knowledge_base_ids: ['5f1f1f1f-1f1f-4f1f-9f1f-1f1f1f1f1f1f'] }), alice, 'k400');
    expect(unknownKb.statusCode).toBe(400);
    expect(unknownKb.json().code).toBe('invalid_knowledge_bases');
    const invalid = await post(`${base}upload/`, uploadBody({ size: -1 }), alice, 'k400');
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().code).toBe('validation_error');
    expect(await keyRows()).toEqual([]);
    expect((await post(`${base}upload/`, uploadBody(), alice, 'k400')).statusCode).toBe(201);
  });

  it('a model failure (502) releases the key: the retry calls the model again and succeeds', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ status: 400, errorMessage: 'provider says no' }, { text: 'Second time lucky' });
    const failed = await post(w.base, { content: 'Try' }, w.alice, 'retry-model');
    expect(failed.statusCode).toBe(502);
    expect(failed.json().code).toBe('model_failed');
    expect(await keyRows()).toEqual([]);
    const retried = await post(w.base, { content: 'Try' }, w.alice, 'retry-model');
    expect(retried.statusCode, retried.body).toBe(201);
    expect(replayed(retried)).toBeUndefined();
    expect(retried.json().content).toBe('Second time lucky');
    expect(fake.requestsTo('openai.chat')).toHaveLength(2);
  });

  it('an expired key is new again, for the same body or another', async () => {
    const { alice, base } = await docsWorld();
    const first = await post(`${base}upload/`, uploadBody(), alice, 'old');
    await setKeyRow(alice.id, 'old', { expiresAt: new Date(Date.now() - 1000) });
    const same = await post(`${base}upload/`, uploadBody(), alice, 'old');
    expect(same.statusCode).toBe(201);
    expect(replayed(same)).toBeUndefined();
    expect(same.json().document.id).not.toBe(first.json().document.id);

    await setKeyRow(alice.id, 'old', { expiresAt: new Date(Date.now() - 1000) });
    const other = await post(`${base}upload/`, uploadBody({ name: 'other.txt' }), alice, 'old');
    expect(other.statusCode).toBe(201);
    expect(await documentCount()).toBe(3);
    // The record now holds the latest response, for IDEMPOTENCY_TTL_SECONDS.
    const row = (await keyRow(alice.id, 'old'))!;
    expect(row.responseBody).toBe(other.body);
    const ttl = (row.expiresAt.getTime() - row.createdAt.getTime()) / 1000;
    expect(ttl).toBeCloseTo(t.config.IDEMPOTENCY_TTL_SECONDS, 0);
  });

  it('a client that disconnects does not lose the key: the reply is still stored and replayed', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Nobody was listening', delayMs: 500 });
    const url = new URL(w.base, await listenUrl(t.app));
    const payload = JSON.stringify({ content: 'Hang up on me' });
    const req = httpRequest(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload),
        authorization: `Bearer ${w.alice.token}`,
        'idempotency-key': 'gone',
      },
    });
    req.on('error', () => undefined);
    req.end(payload);
    await fake.waitForRequests(1);
    req.destroy();

    const row = await waitUntil(async () => {
      const current = await keyRow(w.alice.id, 'gone');
      return current?.state === 'completed' ? current : undefined;
    });
    expect(row.responseStatus).toBe(201);
    const again = await post(w.base, { content: 'Hang up on me' }, w.alice, 'gone');
    expect(again.statusCode).toBe(201);
    expect(replayed(again)).toBe('true');
    expect(again.json().content).toBe('Nobody was listening');
    expect(fake.requestsTo('openai.chat')).toHaveLength(1);
    expect(await messageRows(t, w.chat.id)).toHaveLength(2);
  });
});

describe('the header', () => {
  it.each([
    ['empty', ''],
    ['over 255 characters', 'k'.repeat(256)],
    ['not ASCII', 'café'],
    ['a control character', 'tab\there'],
  ])('%s is 400 validation_error naming Idempotency-Key, and nothing is created', async (_label, key) => {
    const { alice, base } = await docsWorld();
    const res = await post(`${base}upload/`, uploadBody(), alice, key);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'validation_error', errors: { 'Idempotency-Key': [expect.any(String)] } });
    expect(await documentCount()).toBe(0);
    expect(await keyRows()).toEqual([]);
  });

  it('accepts 255 printable ASCII characters, spaces and punctuation included', async () => {
    const { alice, base } = await docsWorld();
    const key = `order 42: ${'~!@#$%^&*()_+{}|<>?'.repeat(13)}`.slice(0, 255);
    expect(key).toHaveLength(255);
    const first = await post(`${base}upload/`, uploadBody(), alice, key);
    expect(first.statusCode).toBe(201);
    expect(replayed(await post(`${base}upload/`, uploadBody(), alice, key))).toBe('true');
  });

  it('without the header nothing changes: each request does the work and no key is recorded', async () => {
    const { alice, base } = await docsWorld();
    const one = await post(`${base}from-url/`, page(), alice);
    const two = await post(`${base}from-url/`, page(), alice);
    expect([one.statusCode, two.statusCode]).toEqual([202, 202]);
    expect(replayed(two)).toBeUndefined();
    expect(two.json().document.id).not.toBe(one.json().document.id);
    expect(await documentCount()).toBe(2);
    expect(await keyRows()).toEqual([]);
  });

  it('is ignored on endpoints that do not take it', async () => {
    const { alice, ws } = await docsWorld();
    const kbs = `/api/workspaces/${ws.id}/knowledge-bases/`;
    const one = await post(kbs, { name: 'One' }, alice, 'same');
    const two = await post(kbs, { name: 'Two' }, alice, 'same');
    expect([one.statusCode, two.statusCode]).toEqual([201, 201]);
    expect(await keyRows()).toEqual([]);
  });
});

describe('deleteExpiredIdempotencyKeys', () => {
  it('deletes expired responses and abandoned claims, keeps live ones, and honours the limit', async () => {
    const user = await newUser(t);
    const now = Date.now();
    const row = (key: string, state: 'in_progress' | 'completed', expiresIn: number, touchedAgo = 0) => ({
      userId: user.id,
      key,
      fingerprint: 'f',
      state,
      expiresAt: new Date(now + expiresIn),
      updatedAt: new Date(now - touchedAgo),
    });
    await db()
      .insert(idempotencyKeys)
      .values([
        row('expired-1', 'completed', -1000),
        row('expired-2', 'completed', -2000),
        row('expired-3', 'completed', -3000),
        row('live', 'completed', 60_000),
        row('running', 'in_progress', 60_000),
        row('running-long', 'in_progress', -1000, 60_000),
        row('abandoned', 'in_progress', 60_000, 6 * 60_000),
      ]);
    expect(await deleteExpiredIdempotencyKeys(db(), 2)).toBe(2);
    expect(await deleteExpiredIdempotencyKeys(db())).toBe(2);
    expect(await deleteExpiredIdempotencyKeys(db())).toBe(0);
    expect((await keyRows()).map((r) => r.key).sort()).toEqual(['live', 'running', 'running-long']);
  });
});

describe('fingerprint', () => {
  it('is independent of key order and depends on method, path, query and body', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"e":0,"f":1}]},"b":1}');
    expect(canonicalJson(undefined)).toBe('null');
    const base = requestFingerprint('POST', '/x/', { a: 1, b: 2 }, false);
    expect(requestFingerprint('POST', '/x/', { b: 2, a: 1 }, false)).toBe(base);
    expect(requestFingerprint('PUT', '/x/', { a: 1, b: 2 }, false)).not.toBe(base);
    expect(requestFingerprint('POST', '/x/?q=1', { a: 1, b: 2 }, false)).not.toBe(base);
    expect(requestFingerprint('POST', '/x/', { a: 1, b: 3 }, false)).not.toBe(base);
    expect(requestFingerprint('POST', '/x/', 'multipart', false)).not.toBe(requestFingerprint('POST', '/x/', undefined, true));
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });
});
