import { eq } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createTestApp } from '../../../test/support/app.js';
import { recordUsage } from '../../../test/support/billing.js';
import { chatWorld, deltaText, injectStream, ledgerRows, listenUrl, messageRows, openHttpStream, useChatTestApp } from '../../../test/support/chat.js';
import { waitUntil } from '../../../test/support/wait.js';
import { creditReservations } from '../billing/billing.table.js';
import { GENERIC_MODEL_FAILURE, GENERIC_REPLY_FAILURE } from './messages.service.js';

// Heartbeats every 50 ms: slow replies below always carry a few `: ping` comments.
const { t, fake } = useChatTestApp({ SSE_HEARTBEAT_SECONDS: '0.05' });

/**
 * A reply slow enough to act on mid-way: `count` words, one chunk each, `delayMs` apart. The
 * defaults leave ~6 s after the first delta, plenty for a stop request on a loaded machine; a
 * stopped reply ends at once (the fake stops writing when the client goes away).
 */
const slowReply = (count = 20, delayMs = 300) => {
  const words = Array.from({ length: count }, (_, i) => `word${i + 1} `);
  return { chunks: words, text: words.join(''), delayMs };
};

const openReservations = async (workspaceId: string) =>
  (await t.deps.database.db.select().from(creditReservations).where(eq(creditReservations.workspaceId, workspaceId))).filter(
    (r) => r.closedAt === null,
  );

describe('stop', () => {
  it('a stop request ends the stream with done.stopped, saves the partial reply as stopped and charges once', async () => {
    const w = await chatWorld(t);
    const url = await listenUrl(t.app);
    const slow = slowReply();
    fake.enqueue({ chunks: slow.chunks, delayMs: slow.delayMs });

    const stream = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Go slowly', stream_id: 'stop-me' } });
    expect(stream.status).toBe(200);
    expect(stream.headers['x-stream-id']).toBe('stop-me');
    await stream.waitFor((events) => events.some((e) => e.event === 'delta'));

    const stop = await t.post(`${w.base}stream/stop/`, { stream_id: 'stop-me' }, w.alice);
    expect(stop.statusCode).toBe(202);
    await stream.ended;

    const events = stream.events();
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data).toMatchObject({ stopped: true, message_id: expect.any(String), user_message_id: expect.any(String) });
    expect(events.filter((e) => e.event === 'error')).toEqual([]);
    const partial = deltaText(events);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(slow.text.length);

    const rows = await messageRows(t, w.chat.id);
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({ id: done.data.message_id, role: 'assistant', stopped: true, content: partial, parentId: rows[0]!.id });
    expect((await t.get(`${w.base}${done.data.message_id}/`, w.alice)).json()).toMatchObject({ stopped: true, content: partial });

    // The provider call was cut, not left running.
    await waitUntil(() => fake.requests[0]?.aborted);
    // Charged exactly once, for the reply; nothing left reserved.
    const ledger = await ledgerRows(t, w.ws.id);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]!.referenceId).toBe(`chat:${done.data.message_id}`);
    expect(ledger[0]!.costUsd).toBeGreaterThan(0);
    expect(await openReservations(w.ws.id)).toEqual([]);
    expect(done.data.usage.total_tokens).toBe(done.data.usage.prompt_tokens + done.data.usage.completion_tokens);
  });

  it('the sharee stops a regenerate stream; a stop for another chat or an unknown id changes nothing', async () => {
    const w = await chatWorld(t);
    const other = await chatWorld(t);
    const url = await listenUrl(t.app);
    fake.enqueue({ text: 'First' }, slowReply());
    const first = await injectStream(t, `${w.base}stream/`, { content: 'Q' }, w.bob);

    const stream = await openHttpStream(url, `${w.base}regenerate/stream/`, {
      as: w.bob,
      body: { user_message_id: first.done.user_message_id, stream_id: 'regen' },
    });
    await stream.waitFor((events) => events.some((e) => e.event === 'delta'));
    // Same stream id, other chat: not this stream.
    expect((await t.post(`${other.base}stream/stop/`, { stream_id: 'regen' }, other.alice)).statusCode).toBe(202);
    expect((await t.post(`${w.base}stream/stop/`, { stream_id: 'unknown' }, w.alice)).statusCode).toBe(202);
    const before = deltaText(stream.events());
    await stream.waitFor((events) => deltaText(events).length > before.length);
    expect(stream.events().some((e) => e.event === 'done')).toBe(false);

    expect((await t.post(`${w.base}stream/stop/`, { stream_id: 'regen' }, w.bob)).statusCode).toBe(202);
    await stream.ended;
    expect(stream.events().at(-1)).toMatchObject({ event: 'done', data: { stopped: true } });
  });

  it('two streams reusing one stream id are both stopped', async () => {
    const w = await chatWorld(t);
    const url = await listenUrl(t.app);
    fake.enqueue(slowReply(), slowReply());
    const one = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'One', stream_id: 'same' } });
    await one.waitFor((events) => events.some((e) => e.event === 'delta'));
    const two = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Two', stream_id: 'same' } });
    await two.waitFor((events) => events.some((e) => e.event === 'delta'));

    expect((await t.post(`${w.base}stream/stop/`, { stream_id: 'same' }, w.alice)).statusCode).toBe(202);
    await Promise.all([one.ended, two.ended]);
    for (const stream of [one, two]) expect(stream.events().at(-1)).toMatchObject({ event: 'done', data: { stopped: true } });
    const replies = (await messageRows(t, w.chat.id)).filter((r) => r.role === 'assistant');
    expect(replies.map((r) => r.stopped)).toEqual([true, true]);
  });

  it.skipIf(!process.env.TEST_REDIS_URL)('a stop received by another API instance reaches the stream (Redis pub/sub)', async () => {
    // Same REDIS_PREFIX: two API processes of one deployment.
    const second = await createTestApp({ ...fake.env, THROTTLE_CHAT_MESSAGES: '10000/minute', REDIS_PREFIX: t.config.REDIS_PREFIX });
    try {
      const w = await chatWorld(t);
      const url = await listenUrl(t.app);
      fake.enqueue(slowReply());
      const stream = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Far away', stream_id: 'remote-stop' } });
      await stream.waitFor((events) => events.some((e) => e.event === 'delta'));

      const stop = await second.post(`${w.base}stream/stop/`, { stream_id: 'remote-stop' }, w.alice);
      expect(stop.statusCode).toBe(202);
      await stream.ended;
      const done = stream.events().at(-1)!;
      expect(done).toMatchObject({ event: 'done', data: { stopped: true } });
      const rows = await messageRows(t, w.chat.id);
      expect(rows[1]).toMatchObject({ stopped: true, content: deltaText(stream.events()) });
      expect(await ledgerRows(t, w.ws.id)).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it.skipIf(!process.env.TEST_REDIS_URL)(
    'a stop sent to another instance before the stream starts is kept in Redis and honoured when it starts',
    async () => {
      const second = await createTestApp({ ...fake.env, THROTTLE_CHAT_MESSAGES: '10000/minute', REDIS_PREFIX: t.config.REDIS_PREFIX });
      const redis = new Redis(process.env.TEST_REDIS_URL!);
      try {
        const w = await chatWorld(t);
        const url = await listenUrl(t.app);
        // The client read X-Stream-Id and stopped at once; its stop reached instance B first.
        expect((await second.post(`${w.base}stream/stop/`, { stream_id: 'early-remote' }, w.alice)).statusCode).toBe(202);
        // Held in Redis, not in B's memory: instance A can see it.
        const retainedKey = `${t.config.REDIS_PREFIX}:retained:chat-stream-stop:${w.chat.id}:early-remote`;
        expect(await redis.exists(retainedKey)).toBe(1);
        expect(await redis.pttl(retainedKey)).toBeGreaterThan(0);

        fake.enqueue(slowReply());
        const stream = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Too late', stream_id: 'early-remote' } });
        expect(stream.status).toBe(200);
        await stream.ended;
        expect(stream.events().at(-1)).toMatchObject({ event: 'done', data: { stopped: true } });
        expect(deltaText(stream.events()).length).toBeLessThan(slowReply().text.length);
        // Honoured once: the retained stop is gone and a reuse of the stream id runs to the end.
        await waitUntil(async () => (await redis.exists(retainedKey)) === 0);
        // Stopped before it reached the model, usually: drop the reply it did not take.
        fake.reset();
        fake.enqueue({ text: 'Runs fully' });
        const reused = await injectStream(t, `${w.base}stream/`, { content: 'Again', stream_id: 'early-remote' }, w.alice);
        expect(reused.done).toMatchObject({ stopped: false });
        expect(deltaText(reused.events)).toBe('Runs fully');
      } finally {
        redis.disconnect();
        await second.close();
      }
    },
  );
});

describe('a client that goes away', () => {
  it('does not lose the reply: generation finishes and the full reply is saved, not stopped', async () => {
    const w = await chatWorld(t);
    const url = await listenUrl(t.app);
    const slow = slowReply(6, 150);
    fake.enqueue({ chunks: slow.chunks, delayMs: slow.delayMs, usage: { inputTokens: 7, outputTokens: 6 } });

    const stream = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Leaving early' } });
    await stream.waitFor((events) => events.some((e) => e.event === 'delta'));
    stream.destroy();

    const reply = await waitUntil(async () => (await messageRows(t, w.chat.id)).find((r) => r.role === 'assistant'));
    expect(reply).toMatchObject({
      content: slow.text,
      stopped: false,
      usage: { prompt_tokens: 7, completion_tokens: 6, total_tokens: 13 },
    });
    expect(fake.requests[0]!.aborted).toBe(false);
    const ledger = await waitUntil(async () => {
      const rows = await ledgerRows(t, w.ws.id);
      return rows.length ? rows : undefined;
    });
    expect(ledger).toHaveLength(1);
    expect(ledger[0]!.referenceId).toBe(`chat:${reply.id}`);
  });
});

describe('a model that fails mid-stream', () => {
  it.each(['destroy', 'error-event'] as const)(
    'failMode %s: an error event with the generic detail ends the stream; no reply; the question and the credit are kept',
    async (failMode) => {
      const w = await chatWorld(t);
      // Just under the free plan's credit: an unreleased reservation would refuse the next call.
      await recordUsage(t, w.ws.id, 0.995);
      fake.enqueue({ chunks: ['Partial ', 'answer ', 'never ', 'finished'], failAfterChunks: 1, failMode, errorMessage: 'upstream exploded: secret-123' });

      const { res, events } = await injectStream(t, `${w.base}stream/`, { content: 'Try' }, w.alice);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(events.at(-1)).toEqual({ event: 'error', data: { detail: GENERIC_MODEL_FAILURE } });
      expect(events.filter((e) => e.event === 'done')).toEqual([]);
      expect(events.filter((e) => e.event === 'error')).toHaveLength(1);
      expect(res.body).not.toContain('secret-123');
      expect(res.body).not.toContain('exploded');

      const rows = await messageRows(t, w.chat.id);
      expect(rows.map((r) => [r.role, r.content])).toEqual([['user', 'Try']]);
      expect(await openReservations(w.ws.id)).toEqual([]);
      expect(await ledgerRows(t, w.ws.id)).toHaveLength(1); // only the recorded usage

      // The next call is not refused for credit; it continues under the newest reply (none yet).
      fake.enqueue({ text: 'Works now' });
      const next = await injectStream(t, `${w.base}stream/`, { content: 'Again' }, w.alice);
      expect(next.res.statusCode).toBe(200);
      expect(deltaText(next.events)).toBe('Works now');
      expect(next.done.stopped).toBe(false);
    },
  );

  it('a provider error before any text is an error event too', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ status: 400, errorMessage: 'bad request secret' });
    const { res, events } = await injectStream(t, `${w.base}stream/`, { content: 'Try' }, w.alice);
    expect(res.statusCode).toBe(200);
    expect(events).toEqual([{ event: 'error', data: { detail: GENERIC_MODEL_FAILURE } }]);
    expect(await openReservations(w.ws.id)).toEqual([]);
  });
});

describe('a failure outside the model call', () => {
  it('an attachment gone from storage ends the stream with the generic reply error (not the model one) and releases the credit', async () => {
    const w = await chatWorld(t);
    const form = new FormData();
    form.append('content', 'Read this');
    form.append('files', new Blob(['Some notes'], { type: 'text/plain' }), 'notes.txt');
    const sent = await t.request('POST', `${w.base}stream/`, { as: w.alice, body: form });
    expect(sent.statusCode).toBe(200);
    const [question] = await messageRows(t, w.chat.id);
    await t.deps.storage.delete(question!.attachments[0]!.storage_key);
    const calls = fake.requests.length;

    const { events } = await injectStream(t, `${w.base}regenerate/stream/`, { user_message_id: question!.id }, w.alice);
    expect(events).toEqual([{ event: 'error', data: { detail: GENERIC_REPLY_FAILURE } }]);
    expect(fake.requests.length).toBe(calls);
    expect(await openReservations(w.ws.id)).toEqual([]);
  });
});

describe('heartbeats', () => {
  it('an idle stream carries `: ping` comments', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ chunks: ['slow ', 'reply'], delayMs: 400 });
    const { res, events } = await injectStream(t, `${w.base}stream/`, { content: 'Ping me' }, w.alice);
    expect(res.body).toMatch(/^: ping$/m);
    // Comments do not disturb the events.
    expect(deltaText(events)).toBe('slow reply');
    expect(events.at(-1)!.event).toBe('done');
  });
});
