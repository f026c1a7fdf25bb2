import { describe, expect, it } from 'vitest';
import {
  chatWorld,
  deltaText,
  injectStream,
  ledgerRows,
  listenUrl,
  messageRows,
  openaiTurns,
  openHttpStream,
  useChatTestApp,
} from '../../../test/support/chat.js';

const { t, fake } = useChatTestApp();

const price = (id: string) => t.deps.catalog.chatModel(id)!;

describe('streamed send', () => {
  it('streams deltas, then done with the saved ids and the provider usage; saves both messages and charges once', async () => {
    const w = await chatWorld(t, { system_prompt: 'Be brief.' });
    fake.enqueue({ text: 'Hello there, Alice!', chunks: ['Hello', ' there,', ' Alice!'], usage: { inputTokens: 12, outputTokens: 5 } });

    const { res, events, done } = await injectStream(t, `${w.base}stream/`, { role: 'user', content: 'Hi model', stream_id: 'my-stream_1' }, w.alice);

    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['cache-control']).toBe('no-cache, no-transform');
    expect(res.headers['x-accel-buffering']).toBe('no');
    expect(res.headers['x-stream-id']).toBe('my-stream_1');

    expect(events.map((e) => e.event)).toEqual(['delta', 'delta', 'delta', 'done']);
    expect(events.filter((e) => e.event === 'delta').map((e) => e.data)).toEqual([
      { text: 'Hello' },
      { text: ' there,' },
      { text: ' Alice!' },
    ]);
    expect(deltaText(events)).toBe('Hello there, Alice!');
    expect(done).toEqual({
      message_id: expect.any(String),
      user_message_id: expect.any(String),
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
      stopped: false,
      sources: [],
    });

    const rows = await messageRows(t, w.chat.id);
    expect(rows).toHaveLength(2);
    const [question, reply] = rows;
    expect(question).toMatchObject({
      id: done.user_message_id,
      role: 'user',
      content: 'Hi model',
      authorId: w.alice.id,
      parentId: null,
      stopped: false,
    });
    expect(reply).toMatchObject({
      id: done.message_id,
      role: 'assistant',
      content: 'Hello there, Alice!',
      authorId: null,
      parentId: question!.id,
      stopped: false,
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
      aiModel: 'gpt-4.1-mini',
      sources: [],
    });

    // The exact request the provider received.
    const [request] = fake.requestsTo('openai.chat');
    expect(fake.requests).toHaveLength(1);
    expect(request!.path).toBe('/v1/chat/completions');
    expect(request!.body).toMatchObject({ model: 'gpt-4.1-mini', stream: true, max_tokens: 4096 });
    expect(openaiTurns(request!.body)).toEqual([
      { role: 'system', text: 'Be brief.' },
      { role: 'user', text: 'Hi model' },
    ]);
    expect(request!.body.tools).toBeUndefined();

    // One ledger row: catalog price × tokens, referenced by the reply.
    const ledger = await ledgerRows(t, w.ws.id);
    expect(ledger).toHaveLength(1);
    const model = price('gpt-4.1-mini');
    expect(ledger[0]).toMatchObject({
      kind: 'chat',
      model: 'gpt-4.1-mini',
      userId: w.alice.id,
      inputTokens: 12,
      outputTokens: 5,
      referenceId: `chat:${done.message_id}`,
    });
    expect(ledger[0]!.costUsd).toBeCloseTo((12 * model.input_price_per_million + 5 * model.output_price_per_million) / 1e6, 12);

    const usage = await t.get(`/api/workspaces/${w.ws.id}/credit-usage/`, w.alice);
    expect(usage.json().total_cost_used).toBeCloseTo(ledger[0]!.costUsd, 6);
  });

  it('generates a stream id when the client sends none, and each reply has its own ledger reference', async () => {
    const w = await chatWorld(t);
    const first = await injectStream(t, `${w.base}stream/`, { content: 'One' }, w.alice);
    const second = await injectStream(t, `${w.base}stream/`, { content: 'Two' }, w.alice);
    const ids = [first.res.headers['x-stream-id'], second.res.headers['x-stream-id']];
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(ids[0]).not.toBe(ids[1]);
    // The default reply echoes the question.
    expect(deltaText(first.events)).toBe('Echo: One');
    const ledger = await ledgerRows(t, w.ws.id);
    expect(ledger.map((row) => row.referenceId).sort()).toEqual([`chat:${first.done.message_id}`, `chat:${second.done.message_id}`].sort());
  });

  it('sends the event stream’s headers without waiting for the model’s first chunk', async () => {
    const w = await chatWorld(t);
    const url = await listenUrl(t.app);
    let chunkWritten = false;
    fake.enqueue({ chunks: ['Late answer'], delayMs: 1500, onFirstChunkWritten: () => (chunkWritten = true) });

    const stream = await openHttpStream(url, `${w.base}stream/`, { as: w.alice, body: { content: 'Take your time', stream_id: 'early-headers' } });
    // The headers are here; the model has (or is about to have) the call and has not written a chunk yet.
    expect(chunkWritten).toBe(false);
    expect(stream.status).toBe(200);
    expect(stream.headers['x-stream-id']).toBe('early-headers');
    await fake.waitForRequests(1);
    expect(stream.events()).toEqual([]);

    const events = await stream.waitFor((all) => all.some((e) => e.event === 'done'));
    expect(deltaText(events)).toBe('Late answer');
  });

  it('accepts a stream_id of 64 characters', async () => {
    const w = await chatWorld(t);
    const id = 'a'.repeat(64);
    const { res, done } = await injectStream(t, `${w.base}stream/`, { content: 'Hi', stream_id: id }, w.alice);
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-stream-id']).toBe(id);
    expect(done.stopped).toBe(false);
  });
});

describe('branches', () => {
  it('regenerates as a sibling, hangs the next message under the newest reply and shows the model only that path', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'R1' }, { text: 'R2' }, { text: 'R3' });

    const a = await injectStream(t, `${w.base}stream/`, { content: 'Question A' }, w.alice);
    const r1 = a.done.message_id as string;
    const aId = a.done.user_message_id as string;

    const regen = await injectStream(t, `${w.base}regenerate/stream/`, { user_message_id: aId }, w.alice);
    expect(regen.res.statusCode).toBe(200);
    expect(deltaText(regen.events)).toBe('R2');
    const r2 = regen.done.message_id as string;
    expect(regen.done.user_message_id).toBe(aId);
    expect(r2).not.toBe(r1);

    const b = await injectStream(t, `${w.base}stream/`, { content: 'Question B' }, w.alice);
    const bId = b.done.user_message_id as string;

    const rows = await messageRows(t, w.chat.id);
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(r1)).toMatchObject({ parentId: aId, content: 'R1' });
    expect(byId.get(r2)).toMatchObject({ parentId: aId, content: 'R2' });
    expect(byId.get(bId)).toMatchObject({ parentId: r2, content: 'Question B' });
    expect(byId.get(b.done.message_id)).toMatchObject({ parentId: bId, content: 'R3' });

    // The regenerate request saw only A; B's request saw A, R2, B (never R1).
    const requests = fake.requestsTo('openai.chat');
    expect(requests).toHaveLength(3);
    expect(openaiTurns(requests[1]!.body)).toEqual([{ role: 'user', text: 'Question A' }]);
    expect(openaiTurns(requests[2]!.body)).toEqual([
      { role: 'user', text: 'Question A' },
      { role: 'assistant', text: 'R2' },
      { role: 'user', text: 'Question B' },
    ]);

    // The list shows every branch with its parent.
    const list = await t.get(w.base, w.alice);
    expect(list.statusCode).toBe(200);
    expect(list.json().count).toBe(5);
    const listed = new Map((list.json().results as Array<{ id: string; parent: string | null; role: string }>).map((m) => [m.id, m]));
    expect(listed.get(aId)).toMatchObject({ parent: null, role: 'user' });
    expect(listed.get(r1)).toMatchObject({ parent: aId, role: 'assistant' });
    expect(listed.get(r2)).toMatchObject({ parent: aId, role: 'assistant' });
    expect(listed.get(bId)).toMatchObject({ parent: r2, role: 'user' });
  });

  it('edit stream updates the author’s message and answers it in a new branch the model sees edited', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'First answer' }, { text: 'Second answer' });
    const a = await injectStream(t, `${w.base}stream/`, { content: 'Original' }, w.alice);
    const aId = a.done.user_message_id as string;

    const edit = await injectStream(t, `${w.base}${aId}/edit/stream/`, { content: 'Edited question', stream_id: 'edit-1' }, w.alice);
    expect(edit.res.statusCode).toBe(200);
    expect(edit.res.headers['x-stream-id']).toBe('edit-1');
    expect(deltaText(edit.events)).toBe('Second answer');
    expect(edit.done.user_message_id).toBe(aId);

    const rows = await messageRows(t, w.chat.id);
    expect(rows).toHaveLength(3);
    expect(rows.find((r) => r.id === aId)).toMatchObject({ content: 'Edited question', parentId: null });
    expect(rows.find((r) => r.id === a.done.message_id)).toMatchObject({ content: 'First answer', parentId: aId });
    expect(rows.find((r) => r.id === edit.done.message_id)).toMatchObject({ content: 'Second answer', parentId: aId });

    const requests = fake.requestsTo('openai.chat');
    expect(openaiTurns(requests[1]!.body)).toEqual([{ role: 'user', text: 'Edited question' }]);
  });

  it('a regenerated older turn becomes the branch the next message continues', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'R1' }, { text: 'R2' }, { text: 'R1b' }, { text: 'R3' });
    const a = await injectStream(t, `${w.base}stream/`, { content: 'A' }, w.alice);
    const b = await injectStream(t, `${w.base}stream/`, { content: 'B' }, w.alice);
    expect(b.done).toBeDefined();
    const regen = await injectStream(t, `${w.base}regenerate/stream/`, { user_message_id: a.done.user_message_id }, w.alice);
    const c = await injectStream(t, `${w.base}stream/`, { content: 'C' }, w.alice);
    const rows = await messageRows(t, w.chat.id);
    expect(rows.find((r) => r.id === c.done.user_message_id)!.parentId).toBe(regen.done.message_id);
    expect(openaiTurns(fake.requestsTo('openai.chat')[3]!.body).map((m) => m.text)).toEqual(['A', 'R1b', 'C']);
  });
});

describe('rule 8: a client that does not accept an event stream', () => {
  it.each([
    ['stream/', () => ({ content: 'JSON please' })],
  ])('send %s with Accept: application/json gets the saved reply as JSON (201)', async (path, body) => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'As JSON', usage: { inputTokens: 3, outputTokens: 2 } });
    const res = await t.request('POST', `${w.base}${path}`, { as: w.alice, body: body(), headers: { accept: 'application/json' } });
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const rows = await messageRows(t, w.chat.id);
    expect(res.json()).toEqual({
      id: rows[1]!.id,
      session: w.chat.id,
      role: 'assistant',
      content: 'As JSON',
      author: null,
      parent: rows[0]!.id,
      attachments: [],
      rating: null,
      reason: '',
      stopped: false,
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      ai_model: 'gpt-4.1-mini',
      sources: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('regenerate and edit streams answer JSON too', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'one' }, { text: 'two' }, { text: 'three' });
    const a = await injectStream(t, `${w.base}stream/`, { content: 'Q' }, w.alice);
    const json = { accept: 'application/json' };
    const regen = await t.request('POST', `${w.base}regenerate/stream/`, { as: w.alice, body: { user_message_id: a.done.user_message_id }, headers: json });
    expect(regen.statusCode).toBe(201);
    expect(regen.json()).toMatchObject({ role: 'assistant', content: 'two', parent: a.done.user_message_id });
    const edit = await t.request('POST', `${w.base}${a.done.user_message_id}/edit/stream/`, { as: w.alice, body: { content: 'Q2' }, headers: json });
    expect(edit.statusCode).toBe(201);
    expect(edit.json()).toMatchObject({ role: 'assistant', content: 'three', parent: a.done.user_message_id });
  });
});
