import { describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/support/app.js';
import {
  chatWorld,
  deltaText,
  injectStream,
  listenUrl,
  messageRows,
  openHttpStream,
  parseSseWithIds,
  useChatTestApp,
} from '../../../test/support/chat.js';
import { newUser } from '../../../test/support/factories.js';
import { createMemoryEventBuffer } from '../../platform/event-buffer/memory.js';

const BUFFER_TTL_MS = 1500;
// The embedded profile's buffer (whatever TEST_REDIS_URL says), kept 1.5 s: expiry is tested below.
// Heartbeats every 50 ms, so a followed stream carries a few `: ping` comments.
const env = { SSE_HEARTBEAT_SECONDS: '0.05' };
const { t, fake } = useChatTestApp(env, { eventBuffer: createMemoryEventBuffer({ ttlMs: BUFFER_TTL_MS, maxEvents: 1000 }) });

/** `count` words, one chunk each, `delayMs` apart. */
const slowReply = (count = 8, delayMs = 250) => {
  const words = Array.from({ length: count }, (_, i) => `word${i + 1} `);
  return { chunks: words, text: words.join(''), delayMs };
};

const sseGet = (app: TestApp, url: string, as: { token: string }, headers: Record<string, string> = {}) =>
  app.request('GET', url, { as, headers: { accept: 'text/event-stream', ...headers } });

/**
 * Starts a slow stream on `a`, drops the client after two deltas, reattaches on `b` with
 * Last-Event-ID (as the sharee, a reader who is not the author) and checks that every remaining
 * event arrives once, in order, and that the `done` is the one a full replay and the saved reply give.
 */
async function dropAndReattach(a: TestApp, b: TestApp) {
  const w = await chatWorld(a);
  const slow = slowReply();
  fake.enqueue({ chunks: slow.chunks, delayMs: slow.delayMs });
  const original = await openHttpStream(await listenUrl(a.app), `${w.base}stream/`, {
    as: w.alice,
    body: { content: 'Go slowly', stream_id: 'resume-me' },
  });
  await original.waitFor((events) => events.filter((e) => e.event === 'delta').length >= 2);
  original.destroy();
  const seen = parseSseWithIds(original.raw);
  expect(seen.map((e) => e.id)).toEqual(seen.map((_, i) => String(i + 1)));
  const lastId = seen.at(-1)!.id!;

  const resumed = await openHttpStream(await listenUrl(b.app), `${w.base}stream/resume-me/`, {
    method: 'GET',
    as: w.bob,
    headers: { 'last-event-id': lastId },
  });
  expect(resumed.status).toBe(200);
  expect(resumed.headers['content-type']).toMatch(/^text\/event-stream/);
  expect(resumed.headers['x-stream-id']).toBe('resume-me');
  await resumed.ended;
  const rest = parseSseWithIds(resumed.raw);
  // Every remaining event once, in order, numbered on from where the client was.
  expect(rest.map((e) => Number(e.id))).toEqual(rest.map((_, i) => Number(lastId) + 1 + i));
  expect(rest.at(-1)!.event).toBe('done');
  expect(rest.filter((e) => e.event === 'done')).toHaveLength(1);
  expect(deltaText([...seen, ...rest])).toBe(slow.text);
  expect(resumed.raw).toContain(': ping');

  // Generation went on without the original client: the whole reply is saved.
  const done = rest.at(-1)!.data;
  const reply = (await messageRows(a, w.chat.id)).find((r) => r.id === done.message_id)!;
  expect(reply).toMatchObject({ role: 'assistant', content: slow.text, stopped: false, streamId: 'resume-me' });
  expect(done).toEqual({
    message_id: reply.id,
    user_message_id: reply.parentId,
    usage: reply.usage,
    stopped: false,
    sources: [],
  });
  // A full replay from the other instance: the same events, the same done.
  const full = parseSseWithIds((await sseGet(a, `${w.base}stream/resume-me/`, w.alice)).body);
  expect(full.slice(Number(lastId))).toEqual(rest);
  expect(deltaText(full)).toBe(slow.text);
}

describe('reattaching to a stream', () => {
  it.skipIf(!process.env.TEST_REDIS_URL)(
    'across API instances (Redis Streams): drop on A, reattach on B with Last-Event-ID, every remaining event once and the same done',
    async () => {
      const a = await createTestApp({ ...fake.env, ...env, THROTTLE_CHAT_MESSAGES: '10000/minute' });
      const b = await createTestApp({ ...fake.env, ...env, THROTTLE_CHAT_MESSAGES: '10000/minute', REDIS_PREFIX: a.config.REDIS_PREFIX });
      try {
        expect(a.deps.eventBuffer.kind).toBe('redis');
        await dropAndReattach(a, b);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    },
  );

  it('embedded profile (in-memory buffer): drop and reattach on the one instance', async () => {
    expect(t.deps.eventBuffer.kind).toBe('memory');
    await dropAndReattach(t, t);
  });

  it('after the end: everything at once; from the last id: nothing; once expired: a done rebuilt from the saved reply', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'All done here.', chunks: 3 });
    const streamed = await injectStream(t, `${w.base}stream/`, { content: 'Hi', stream_id: 'finished' }, w.alice);
    const original = parseSseWithIds(streamed.res.body);
    expect(original.map((e) => [e.id, e.event])).toEqual([
      ['1', 'delta'],
      ['2', 'delta'],
      ['3', 'delta'],
      ['4', 'done'],
    ]);

    const replay = await sseGet(t, `${w.base}stream/finished/`, w.bob);
    expect(replay.statusCode).toBe(200);
    expect(parseSseWithIds(replay.body)).toEqual(original);
    const fromTwo = await sseGet(t, `${w.base}stream/finished/?last_event_id=2`, w.alice);
    expect(parseSseWithIds(fromTwo.body)).toEqual(original.slice(2));
    const atEnd = await sseGet(t, `${w.base}stream/finished/`, w.alice, { 'last-event-id': '4' });
    expect(atEnd.statusCode).toBe(200);
    expect(parseSseWithIds(atEnd.body)).toEqual([]);

    await new Promise((resolve) => setTimeout(resolve, BUFFER_TTL_MS + 300));
    const expired = await sseGet(t, `${w.base}stream/finished/`, w.alice, { 'last-event-id': '2' });
    expect(expired.statusCode).toBe(200);
    expect(parseSseWithIds(expired.body)).toEqual([{ event: 'done', data: streamed.done, id: undefined }]);
  });

  it('refuses whoever cannot read the chat, unknown streams and malformed event ids', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Secret answer.' });
    await injectStream(t, `${w.base}stream/`, { content: 'Hi', stream_id: 'private' }, w.alice);
    const outsider = await newUser(t);
    // carol is a member the chat is not shared with, the workspace owner reads it only when public:
    // 404 as for the chat's messages; someone outside the workspace: refused as for its messages.
    for (const [who, status, code] of [
      [w.carol, 404, 'not_found'],
      [w.wsOwner, 404, 'not_found'],
      [outsider, 403, (await t.get(w.base, outsider)).json().code],
    ] as const) {
      const refused = await sseGet(t, `${w.base}stream/private/`, who);
      expect(refused.statusCode).toBe(status);
      expect(refused.json().code).toBe(code);
      expect(refused.body).not.toContain('Secret');
      const listed = await t.get(w.base, who);
      expect([listed.statusCode, listed.json().code]).toEqual([status, code]);
    }
    const unknown = await sseGet(t, `${w.base}stream/never-started/`, w.alice);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ detail: 'Stream not found.', code: 'stream_not_found' });
    // A stream id belongs to its chat.
    const other = await chatWorld(t);
    expect((await sseGet(t, `${other.base}stream/private/`, other.alice)).statusCode).toBe(404);
    expect((await sseGet(t, `${w.base}stream/private/`, w.alice, { 'last-event-id': 'abc' })).statusCode).toBe(400);
    expect((await sseGet(t, `${w.base}stream/private/?last_event_id=-1`, w.alice)).statusCode).toBe(400);
    expect((await sseGet(t, `${w.base}stream/bad%20id/`, w.alice)).statusCode).toBe(400);
  });
});
