import { readdirSync } from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { forgetCachedAccess } from '../../../test/support/app.js';
import { recordUsage, subscribe } from '../../../test/support/billing.js';
import {
  type ChatWorld,
  chatWorld,
  deltaText,
  injectStream,
  ledgerRows,
  messageRows,
  useChatTestApp,
} from '../../../test/support/chat.js';
import { newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { creditBalances, creditReservations, subscriptions } from '../billing/billing.table.js';
import { GENERIC_MODEL_FAILURE } from './messages.service.js';

const { t, fake } = useChatTestApp();

/** Alice's question with its reply, and Bob's (the sharee's) question with its reply. */
async function conversation(w: ChatWorld) {
  const a = await injectStream(t, `${w.base}stream/`, { content: 'Alice asks' }, w.alice);
  const b = await injectStream(t, `${w.base}stream/`, { content: 'Bob asks' }, w.bob);
  expect(a.done && b.done).toBeTruthy();
  return {
    aliceQ: a.done.user_message_id as string,
    aliceR: a.done.message_id as string,
    bobQ: b.done.user_message_id as string,
    bobR: b.done.message_id as string,
  };
}

/** Every attachment file stored for a chat (the app's local storage directory). */
function storedFiles(w: ChatWorld): string[] {
  const root = path.join(t.config.DATA_DIR, 'files', 'workspaces', w.ws.id, 'chats', w.chat.id);
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (!full.includes(`${path.sep}.tmp${path.sep}`) && !full.includes(`${path.sep}.meta${path.sep}`)) out.push(full);
    }
  };
  walk(root);
  return out;
}

describe('permission rules', () => {
  it('rule 2: the sharee can send, regenerate their own message and stop', async () => {
    const w = await chatWorld(t);
    const send = await injectStream(t, `${w.base}stream/`, { content: 'From Bob' }, w.bob);
    expect(send.res.statusCode).toBe(200);
    expect(send.done.stopped).toBe(false);
    const rows = await messageRows(t, w.chat.id);
    expect(rows[0]).toMatchObject({ role: 'user', authorId: w.bob.id, content: 'From Bob' });

    const regen = await injectStream(t, `${w.base}regenerate/stream/`, { user_message_id: send.done.user_message_id }, w.bob);
    expect(regen.res.statusCode).toBe(200);
    expect(regen.done.user_message_id).toBe(send.done.user_message_id);

    const stop = await t.post(`${w.base}stream/stop/`, { stream_id: 'not-running' }, w.bob);
    expect(stop.statusCode).toBe(202);

    const plain = await t.post(w.base, { content: 'Non-streamed from Bob' }, w.bob);
    expect(plain.statusCode).toBe(201);
  });

  it('rule 3: only the author edits a message (streamed or not); replies cannot be edited', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    const calls = fake.requests.length;

    for (const [who, id] of [
      [w.bob, c.aliceQ],
      [w.alice, c.bobQ], // the chat's owner is not the author
    ] as const) {
      const streamed = await t.post(`${w.base}${id}/edit/stream/`, { content: 'Hijacked' }, who);
      expect(streamed.statusCode, streamed.body).toBe(403);
      expect(streamed.headers['content-type']).toMatch(/^application\/json/);
      expect(streamed.json().code).toBe('not_message_author');
      const put = await t.put(`${w.base}${id}/`, { content: 'Hijacked' }, who);
      expect(put.statusCode).toBe(403);
      const patch = await t.patch(`${w.base}${id}/`, { content: 'Hijacked' }, who);
      expect(patch.statusCode).toBe(403);
    }
    expect(fake.requests.length).toBe(calls);
    const rows = await messageRows(t, w.chat.id);
    expect(rows.find((r) => r.id === c.aliceQ)!.content).toBe('Alice asks');
    expect(rows.find((r) => r.id === c.bobQ)!.content).toBe('Bob asks');

    const reply = await t.patch(`${w.base}${c.aliceR}/`, { content: 'Rewritten answer' }, w.alice);
    expect(reply.statusCode).toBe(400);

    // The author edits without a new reply (but not to nothing).
    expect((await t.patch(`${w.base}${c.bobQ}/`, { content: '  ' }, w.bob)).statusCode).toBe(400);
    const own = await t.patch(`${w.base}${c.bobQ}/`, { content: 'Bob asks, edited' }, w.bob);
    expect(own.statusCode).toBe(200);
    expect(own.json()).toMatchObject({ id: c.bobQ, content: 'Bob asks, edited', author: w.bob.id });
    expect(fake.requests.length).toBe(calls);
    expect(await messageRows(t, w.chat.id)).toHaveLength(4);
  });

  it('rule 4: regenerating is open to the message’s author and the chat’s owner only', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    const refused = await t.post(`${w.base}regenerate/stream/`, { user_message_id: c.aliceQ }, w.bob);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect((await t.post(`${w.base}regenerate/`, { user_message_id: c.aliceQ }, w.bob)).statusCode).toBe(403);

    // The chat's owner may regenerate the sharee's message.
    const byOwner = await injectStream(t, `${w.base}regenerate/stream/`, { user_message_id: c.bobQ }, w.alice);
    expect(byOwner.res.statusCode).toBe(200);
    const rows = await messageRows(t, w.chat.id);
    expect(rows.find((r) => r.id === byOwner.done.message_id)!.parentId).toBe(c.bobQ);

    // Only user messages can be regenerated; unknown ids are 404.
    const ofReply = await t.post(`${w.base}regenerate/`, { user_message_id: c.aliceR }, w.alice);
    expect(ofReply.statusCode).toBe(400);
    const unknown = await t.post(`${w.base}regenerate/stream/`, { user_message_id: '00000000-0000-4000-8000-000000000000' }, w.alice);
    expect(unknown.statusCode).toBe(404);
  });

  it('rule 5: replies are deleted by the chat’s owner; user messages by their author or the chat’s owner', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    expect((await t.delete(`${w.base}${c.aliceR}/`, w.bob)).statusCode).toBe(403);
    expect((await t.delete(`${w.base}${c.bobR}/`, w.bob)).statusCode).toBe(403); // even the reply to his own message
    expect((await t.delete(`${w.base}${c.aliceQ}/`, w.bob)).statusCode).toBe(403);
    expect(await messageRows(t, w.chat.id)).toHaveLength(4);

    // The author deletes their own message, and the replies below go with it.
    expect((await t.delete(`${w.base}${c.bobQ}/`, w.bob)).statusCode).toBe(204);
    expect((await messageRows(t, w.chat.id)).map((r) => r.id).sort()).toEqual([c.aliceQ, c.aliceR].sort());

    // The chat's owner deletes a reply.
    expect((await t.delete(`${w.base}${c.aliceR}/`, w.alice)).statusCode).toBe(204);
    expect((await messageRows(t, w.chat.id)).map((r) => r.id)).toEqual([c.aliceQ]);
    expect((await t.get(`${w.base}${c.aliceR}/`, w.alice)).statusCode).toBe(404);
  });

  it('rule 5: the chat’s owner deletes a sharee’s message; deleting the first message deletes the whole tree', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    expect((await t.delete(`${w.base}${c.bobQ}/`, w.alice)).statusCode).toBe(204);
    expect(await messageRows(t, w.chat.id)).toHaveLength(2);
    const more = await injectStream(t, `${w.base}stream/`, { content: 'Again' }, w.bob);
    expect((await messageRows(t, w.chat.id)).find((r) => r.id === more.done.user_message_id)!.parentId).toBe(c.aliceR);
    expect((await t.delete(`${w.base}${c.aliceQ}/`, w.alice)).statusCode).toBe(204);
    expect(await messageRows(t, w.chat.id)).toHaveLength(0);
  });

  it('rule 6: only assistant messages can be rated; a null rating clears it; readers of a public chat rate too', async () => {
    const w = await chatWorld(t, { isPublic: true });
    const c = await conversation(w);
    const onUser = await t.post(`${w.base}${c.aliceQ}/feedback/`, { rating: 'up' }, w.alice);
    expect(onUser.statusCode).toBe(400);
    expect(onUser.json().code).toBe('not_rateable');

    const rated = await t.post(`${w.base}${c.aliceR}/feedback/`, { rating: 'down', reason: 'Too long' }, w.carol);
    expect(rated.statusCode).toBe(200);
    expect(rated.json()).toMatchObject({ id: c.aliceR, rating: 'down', reason: 'Too long' });
    expect((await t.get(`${w.base}${c.aliceR}/`, w.alice)).json()).toMatchObject({ rating: 'down', reason: 'Too long' });

    const cleared = await t.post(`${w.base}${c.aliceR}/feedback/`, { rating: null }, w.bob);
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json()).toMatchObject({ rating: null, reason: '' });
    const [row] = (await messageRows(t, w.chat.id)).filter((r) => r.id === c.aliceR);
    expect(row).toMatchObject({ rating: null, reason: '' });

    expect((await t.post(`${w.base}${c.aliceR}/feedback/`, { rating: 'meh' }, w.alice)).statusCode).toBe(400);
  });

  it('rules 1-2: a member who only reads a public chat lists and rates but cannot send, regenerate, edit, stop or delete', async () => {
    const w = await chatWorld(t, { isPublic: true });
    const c = await conversation(w);
    const calls = fake.requests.length;
    const refused = [
      ['POST', `${w.base}stream/`, { content: 'Hi' }],
      ['POST', w.base, { content: 'Hi' }],
      ['POST', `${w.base}regenerate/stream/`, { user_message_id: c.aliceQ }],
      ['POST', `${w.base}regenerate/`, { user_message_id: c.aliceQ }],
      ['POST', `${w.base}${c.aliceQ}/edit/stream/`, { content: 'Edit' }],
      ['PUT', `${w.base}${c.aliceQ}/`, { content: 'Edit' }],
      ['POST', `${w.base}stream/stop/`, { stream_id: 'abc' }],
      ['DELETE', `${w.base}${c.aliceR}/`, undefined],
    ] as const;
    for (const [method, url, body] of refused) {
      for (const reader of [w.carol, w.wsOwner]) {
        const res = await t.request(method, url, { as: reader, body });
        expect(res.statusCode, `${method} ${url}`).toBe(403);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
      }
    }
    expect(fake.requests.length).toBe(calls);
    expect(await messageRows(t, w.chat.id)).toHaveLength(4);

    const list = await t.get(w.base, w.carol);
    expect(list.statusCode).toBe(200);
    expect(list.json().count).toBe(4);
    expect((await t.get(`${w.base}${c.aliceR}/`, w.carol)).statusCode).toBe(200);
    expect((await t.post(`${w.base}${c.aliceR}/feedback/`, { rating: 'up' }, w.carol)).statusCode).toBe(200);
  });

  it('a chat that is neither shared with nor public to the caller is 404; a non-member gets 403', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    expect((await t.get(w.base, w.carol)).statusCode).toBe(404);
    expect((await t.post(`${w.base}stream/`, { content: 'Hi' }, w.carol)).statusCode).toBe(404);
    expect((await t.get(`${w.base}${c.aliceR}/`, w.carol)).statusCode).toBe(404);
    // Message ids only resolve inside their own chat.
    const other = (await t.post(`/api/workspaces/${w.ws.id}/chats/`, { name: 'Other' }, w.alice)).json();
    const otherBase = `/api/workspaces/${w.ws.id}/chats/${other.id}/messages/`;
    expect((await t.get(`${otherBase}${c.aliceR}/`, w.alice)).statusCode).toBe(404);
    expect((await t.post(`${otherBase}regenerate/stream/`, { user_message_id: c.aliceQ }, w.alice)).statusCode).toBe(404);
    expect((await t.post(`${otherBase}${c.aliceQ}/edit/stream/`, { content: 'x' }, w.alice)).statusCode).toBe(404);
    expect((await t.delete(`${otherBase}${c.aliceQ}/`, w.alice)).statusCode).toBe(404);
    expect(await messageRows(t, w.chat.id)).toHaveLength(4);
    const outsider = await newUser(t);
    await newWorkspace(t, outsider, 'Elsewhere');
    expect((await t.get(w.base, outsider)).statusCode).toBe(403);
    expect((await t.post(`${w.base}stream/`, { content: 'Hi' }, outsider)).statusCode).toBe(403);
    expect((await t.post(`${w.base}stream/`, { content: 'Hi' }, null)).statusCode).toBe(403);
  });
});

describe('rule 7: refusals are JSON errors before streaming', () => {
  const expectJsonError = (res: { statusCode: number; headers: Record<string, unknown>; json(): { code: string } }, status: number, code?: string) => {
    expect(res.statusCode).toBe(status);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    if (code) expect(res.json().code).toBe(code);
  };

  it.each([
    ['a bad stream_id pattern', { content: 'Hi', stream_id: 'has space!' }],
    ['a stream_id of 65 characters', { content: 'Hi', stream_id: 'a'.repeat(65) }],
    ['an empty stream_id', { content: 'Hi', stream_id: '' }],
    ['empty content', { content: '' }],
    ['blank content', { content: '   \n ' }],
    ['no content', { stream_id: 'abc' }],
    ['an assistant role', { role: 'assistant', content: 'Hi' }],
  ])('400 for %s', async (_label, body) => {
    const w = await chatWorld(t);
    const res = await t.post(`${w.base}stream/`, body, w.alice);
    expectJsonError(res, 400);
    expect(res.json().detail).toEqual(expect.any(String));
    expect(await messageRows(t, w.chat.id)).toHaveLength(0);
    expect(fake.requests).toHaveLength(0);
  });

  it('400 for a bad stream_id on regenerate, edit and stop; 400 for empty edit content', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    expectJsonError(await t.post(`${w.base}regenerate/stream/`, { user_message_id: c.aliceQ, stream_id: 'x'.repeat(65) }, w.alice), 400);
    expectJsonError(await t.post(`${w.base}${c.aliceQ}/edit/stream/`, { content: 'Q', stream_id: 'a/b' }, w.alice), 400);
    expectJsonError(await t.post(`${w.base}${c.aliceQ}/edit/stream/`, { content: ' ' }, w.alice), 400);
    expectJsonError(await t.post(`${w.base}stream/stop/`, { stream_id: 'a'.repeat(65) }, w.alice), 400);
    expectJsonError(await t.post(`${w.base}regenerate/stream/`, { user_message_id: 'nope' }, w.alice), 400);
    expect(fake.requests).toHaveLength(2);
  });

  it('402 credit_exhausted when the credit is used up (send, regenerate, edit; streamed or not), nothing saved', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    await recordUsage(t, w.ws.id, 1);
    const calls = fake.requests.length;
    for (const [url, body] of [
      [`${w.base}stream/`, { content: 'More' }],
      [w.base, { content: 'More' }],
      [`${w.base}regenerate/stream/`, { user_message_id: c.aliceQ }],
      [`${w.base}regenerate/`, { user_message_id: c.aliceQ }],
      [`${w.base}${c.aliceQ}/edit/stream/`, { content: 'Changed' }],
    ] as const) {
      expectJsonError(await t.post(url, body, w.alice), 402, 'credit_exhausted');
    }
    expect(fake.requests.length).toBe(calls);
    const rows = await messageRows(t, w.chat.id);
    expect(rows).toHaveLength(4);
    // A refused edit leaves the message as it was.
    expect(rows.find((r) => r.id === c.aliceQ)!.content).toBe('Alice asks');
  });

  it('with credit for one turn left, exactly one of 50 parallel sends is answered; the 49 refused store nothing and hold nothing', async () => {
    const w = await chatWorld(t);
    // The hold and the user message are one statement: this runs it 50 times against one balance row.
    // The one turn's own charge uses up the rest too, so a send that comes after it has settled is refused as well.
    await recordUsage(t, w.ws.id, 1 - 0.001);
    fake.enqueue({ text: 'Only one', usage: { inputTokens: 10, outputTokens: 10_000 } });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => t.post(w.base, { content: `Parallel ${i}` }, w.alice)));
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    const refused = results.filter((r) => r.statusCode !== 201);
    expect(refused).toHaveLength(49);
    for (const res of refused) expectJsonError(res, 402, 'credit_exhausted');
    expect(fake.requests).toHaveLength(1);
    const rows = await messageRows(t, w.chat.id);
    expect(rows.map((r) => r.role).sort()).toEqual(['assistant', 'user']);
    const holds = await t.deps.database.db.select().from(creditReservations).where(eq(creditReservations.workspaceId, w.ws.id));
    expect(holds).toHaveLength(1);
    expect(holds[0]!.closedAt).not.toBeNull();
  });

  it('a send that only an expired hold (a crashed turn) stands in the way of gives it back, then stores its message once', async () => {
    const w = await chatWorld(t);
    await recordUsage(t, w.ws.id, 0.5);
    const crashed = await t.deps.services.credit.reserve(w.ws.id, 0.5); // the rest of the period's credit
    await t.deps.database.db.update(creditReservations).set({ expiresAt: new Date(Date.now() - 3_600_000) }).where(eq(creditReservations.id, crashed.id));
    fake.enqueue({ text: 'After the crash' });
    // The first composed statement is refused and writes nothing; the second, after the give-back, holds and stores.
    const res = await t.post(w.base, { content: 'Once' }, w.alice);
    expect(res.statusCode).toBe(201);
    expect(fake.requests).toHaveLength(1);
    const rows = await messageRows(t, w.chat.id);
    expect(rows.filter((r) => r.role === 'user').map((r) => r.content)).toEqual(['Once']);
    const holds = await t.deps.database.db.select().from(creditReservations).where(eq(creditReservations.workspaceId, w.ws.id));
    expect(holds).toHaveLength(2);
    for (const hold of holds) expect(hold.closedAt).not.toBeNull();
    // Each given back once: nothing stays reserved, and the ledger has the earlier usage and this turn's charge.
    const [balance] = await t.deps.database.db.select().from(creditBalances).where(eq(creditBalances.workspaceId, w.ws.id));
    expect(balance!.reservedUsd).toBe(0);
    const ledger = await ledgerRows(t, w.ws.id);
    expect(ledger).toHaveLength(2);
    expect(balance!.usedUsd).toBeCloseTo(ledger.reduce((sum, row) => sum + row.costUsd, 0), 8);
  });

  it('402 model_not_in_plan when the plan no longer includes the chat’s model', async () => {
    const w = await chatWorld(t, {
      ai_model: 'o3',
      beforeChat: (ws, payer) => subscribe(t, ws.id, 'team', { payer }),
    });
    fake.enqueue({ text: 'Premium answer' });
    const ok = await injectStream(t, `${w.base}stream/`, { content: 'Hi' }, w.alice);
    expect(deltaText(ok.events)).toBe('Premium answer');

    await t.deps.database.db.update(subscriptions).set({ status: 'canceled' }).where(eq(subscriptions.workspaceId, w.ws.id));
    forgetCachedAccess(t); // written behind the service's back (a webhook would drop the cached billing state)
    const res = await t.post(`${w.base}stream/`, { content: 'Again' }, w.alice);
    expectJsonError(res, 402, 'model_not_in_plan');
    expectJsonError(await t.post(`${w.base}regenerate/stream/`, { user_message_id: ok.done.user_message_id }, w.alice), 402, 'model_not_in_plan');
    expect(fake.requests).toHaveLength(1);
    expect(await messageRows(t, w.chat.id)).toHaveLength(2);
  });

  it('409 workspace_archived for sends, edits, deletes and feedback; reading still works', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    const archive = await t.patch(`/api/workspaces/${w.ws.id}/`, { status: 'archived' }, w.wsOwner);
    expect(archive.statusCode).toBe(200);
    const calls = fake.requests.length;
    for (const [method, url, body] of [
      ['POST', `${w.base}stream/`, { content: 'Hi' }],
      ['POST', w.base, { content: 'Hi' }],
      ['POST', `${w.base}regenerate/stream/`, { user_message_id: c.aliceQ }],
      ['POST', `${w.base}${c.aliceQ}/edit/stream/`, { content: 'Edit' }],
      ['PATCH', `${w.base}${c.aliceQ}/`, { content: 'Edit' }],
      ['DELETE', `${w.base}${c.aliceR}/`, undefined],
      ['POST', `${w.base}${c.aliceR}/feedback/`, { rating: 'up' }],
    ] as const) {
      const res = await t.request(method, url, { as: w.alice, body });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(409);
      expect(res.json().code).toBe('workspace_archived');
    }
    expect(fake.requests.length).toBe(calls);
    expect((await t.get(w.base, w.alice)).json().count).toBe(4);
    expect((await t.get(`${w.base}${c.aliceR}/`, w.alice)).json().rating).toBeNull();
  });
});

describe('non-streamed endpoints', () => {
  it('send returns 201 with the reply; regenerate returns 201 with a sibling', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Plain reply', usage: { inputTokens: 4, outputTokens: 2 } }, { text: 'Another' });
    const sent = await t.post(w.base, { role: 'user', content: 'Plain question' }, w.alice);
    expect(sent.statusCode).toBe(201);
    expect(sent.headers['content-type']).toMatch(/^application\/json/);
    const rows = await messageRows(t, w.chat.id);
    expect(sent.json()).toMatchObject({
      id: rows[1]!.id,
      role: 'assistant',
      content: 'Plain reply',
      parent: rows[0]!.id,
      usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
      stopped: false,
      ai_model: 'gpt-4.1-mini',
    });
    expect(rows[0]).toMatchObject({ role: 'user', content: 'Plain question', authorId: w.alice.id });
    // The non-streamed endpoints still call the model with the real (streaming) client.
    expect(fake.requestsTo('openai.chat')[0]!.body.messages.at(-1)).toEqual({ role: 'user', content: 'Plain question' });

    const regen = await t.post(`${w.base}regenerate/`, { user_message_id: rows[0]!.id }, w.alice);
    expect(regen.statusCode).toBe(201);
    expect(regen.json()).toMatchObject({ role: 'assistant', content: 'Another', parent: rows[0]!.id });
    expect(await ledgerRows(t, w.ws.id)).toHaveLength(2);
  });

  it('GET one message and the list (paginated) show the public fields', async () => {
    const w = await chatWorld(t);
    const c = await conversation(w);
    const one = await t.get(`${w.base}${c.aliceQ}/`, w.bob);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual({
      id: c.aliceQ,
      session: w.chat.id,
      role: 'user',
      content: 'Alice asks',
      author: w.alice.id,
      parent: null,
      attachments: [],
      rating: null,
      reason: '',
      stopped: false,
      usage: null,
      ai_model: null,
      sources: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const page = await t.request('GET', w.base, { as: w.alice, query: { limit: '2', offset: '1' } });
    expect(page.json()).toMatchObject({ count: 4, results: [{ id: c.aliceR }, { id: c.bobQ }] });
  });

  it('a model failure answers JSON callers a generic 502, keeps the question and releases the credit', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ status: 400, errorMessage: 'secret provider detail' });
    const res = await t.post(w.base, { content: 'Will fail' }, w.alice);
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({ detail: GENERIC_MODEL_FAILURE, code: 'model_failed' });
    expect(res.body).not.toContain('secret provider detail');
    fake.enqueue({ failAfterChunks: 1, failMode: 'error-event', errorMessage: 'another secret' });
    const streamJson = await t.request('POST', `${w.base}stream/`, { as: w.alice, body: { content: 'Fail too' }, headers: { accept: 'application/json' } });
    expect(streamJson.statusCode).toBe(502);
    expect(streamJson.json().detail).toBe(GENERIC_MODEL_FAILURE);
    const rows = await messageRows(t, w.chat.id);
    expect(rows.map((r) => r.role)).toEqual(['user', 'user']);
    const open = await t.deps.database.db.select().from(creditReservations).where(eq(creditReservations.workspaceId, w.ws.id));
    expect(open.every((r) => r.closedAt !== null)).toBe(true);
  });
});

describe('model call settings through the chat endpoint', () => {
  const team = (ws: { id: string }, payer: TestUser) => subscribe(t, ws.id, 'team', { payer });

  it('Claude 4.x: temperature wins over top_p, stop goes as stop_sequences, max_tokens as set', async () => {
    const w = await chatWorld(t, {
      ai_model: 'claude-sonnet-4-5',
      temperature: 0.5,
      system_prompt: 'You are Claude.',
      model_parameters: { top_p: 0.9, stop: ['END'], max_tokens: 1000, seed: 7 },
      beforeChat: team,
    });
    fake.enqueue({ text: 'Bonjour', usage: { inputTokens: 9, outputTokens: 1 } });
    const { events, done } = await injectStream(t, `${w.base}stream/`, { content: 'Hello Claude' }, w.alice);
    expect(deltaText(events)).toBe('Bonjour');
    expect(done.usage).toEqual({ prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 });
    const [request] = fake.requestsTo('anthropic.messages');
    expect(request!.body).toMatchObject({
      model: 'claude-sonnet-4-5',
      max_tokens: 1000,
      temperature: 0.5,
      stop_sequences: ['END'],
      stream: true,
    });
    expect(request!.body).not.toHaveProperty('top_p');
    expect(request!.body).not.toHaveProperty('seed');
    expect(request!.body).not.toHaveProperty('thinking');
    expect(JSON.stringify(request!.body.system)).toContain('You are Claude.');
    expect(request!.body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hello Claude' }] }]);
    expect((await ledgerRows(t, w.ws.id))[0]!.costUsd).toBeCloseTo((9 * 3 + 1 * 15) / 1e6, 12);
  });

  it('Claude 4.x with thinking: a thinking budget, no sampling settings, max_tokens = answer + budget', async () => {
    const w = await chatWorld(t, {
      ai_model: 'claude-opus-4-1',
      temperature: 0.7,
      model_parameters: { thinking: { budget_tokens: 2000 }, max_tokens: 1000, top_k: 5 },
      beforeChat: team,
    });
    await injectStream(t, `${w.base}stream/`, { content: 'Think' }, w.alice);
    const [request] = fake.requestsTo('anthropic.messages');
    expect(request!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
    expect(request!.body.max_tokens).toBe(3000);
    expect(request!.body).not.toHaveProperty('temperature');
    expect(request!.body).not.toHaveProperty('top_k');
    expect(request!.body).not.toHaveProperty('top_p');
  });

  it('OpenAI reasoning model: no temperature, reasoning_effort sent, max_tokens as max_completion_tokens', async () => {
    const w = await chatWorld(t, {
      ai_model: 'o4-mini',
      temperature: 0.7,
      model_parameters: { reasoning_effort: 'high', max_tokens: 5000, stop: 'END', presence_penalty: 1 },
      beforeChat: team,
    });
    await injectStream(t, `${w.base}stream/`, { content: 'Reason' }, w.alice);
    const [request] = fake.requestsTo('openai.chat');
    expect(request!.body).toMatchObject({ model: 'o4-mini', reasoning_effort: 'high', max_completion_tokens: 5000 });
    for (const key of ['temperature', 'top_p', 'stop', 'presence_penalty', 'max_tokens']) expect(request!.body).not.toHaveProperty(key);
  });

  it('gpt-4.1: max_tokens is capped at the model’s max_output_tokens; sampling settings pass', async () => {
    const w = await chatWorld(t, {
      ai_model: 'gpt-4.1',
      temperature: 1.2,
      model_parameters: { max_tokens: 100_000, top_p: 0.8, seed: 42, stop: ['STOP'] },
      beforeChat: team,
    });
    await injectStream(t, `${w.base}stream/`, { content: 'Cap it' }, w.alice);
    const [request] = fake.requestsTo('openai.chat');
    expect(request!.body).toMatchObject({ model: 'gpt-4.1', max_tokens: 32_768, temperature: 1.2, top_p: 0.8, seed: 42, stop: ['STOP'] });
  });
});

describe('attachments', () => {
  const form = (content: string, files: Array<{ name: string; type: string; data: string | Buffer }>, extra: Record<string, string> = {}) => {
    const body = new FormData();
    body.append('role', 'user');
    body.append('content', content);
    for (const [key, value] of Object.entries(extra)) body.append(key, value);
    for (const file of files) body.append('files', new Blob([file.data], { type: file.type }), file.name);
    return body;
  };
  // A 1x1 transparent PNG.
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

  it('a text file reaches the model as text, an image as an image part; both are listed without storage keys', async () => {
    const w = await chatWorld(t);
    const body = form(
      'What do these say?',
      [
        { name: 'notes.txt', type: 'text/plain', data: 'The launch code is 4242.' },
        { name: 'pixel.png', type: 'image/png', data: png },
      ],
      { stream_id: 'with-files' },
    );
    const res = await t.request('POST', `${w.base}stream/`, { as: w.alice, body });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['x-stream-id']).toBe('with-files');

    const [request] = fake.requestsTo('openai.chat');
    const user = request!.body.messages.at(-1);
    expect(user.role).toBe('user');
    expect(user.content).toEqual([
      { type: 'text', text: 'What do these say?' },
      { type: 'text', text: 'Attached file "notes.txt":\nThe launch code is 4242.' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
    ]);

    const [question] = await messageRows(t, w.chat.id);
    const listed = (await t.get(`${w.base}${question!.id}/`, w.alice)).json();
    expect(listed.attachments).toEqual([
      { id: expect.any(String), name: 'notes.txt', content_type: 'text/plain', size: 24 },
      { id: expect.any(String), name: 'pixel.png', content_type: 'image/png', size: png.length },
    ]);
    expect(JSON.stringify((await t.get(w.base, w.alice)).json())).not.toContain('storage_key');
    expect(storedFiles(w)).toHaveLength(2);

    // Deleting the message removes its files from storage.
    expect((await t.delete(`${w.base}${question!.id}/`, w.alice)).statusCode).toBe(204);
    expect(storedFiles(w)).toHaveLength(0);
  });

  it('a file alone is a valid message; the non-streamed send takes multipart too', async () => {
    const w = await chatWorld(t);
    const res = await t.request('POST', w.base, { as: w.alice, body: form('', [{ name: 'data.csv', type: 'text/csv', data: 'a,b\n1,2' }]) });
    expect(res.statusCode, res.body).toBe(201);
    const [request] = fake.requestsTo('openai.chat');
    // A single text part goes as a plain string on Chat Completions.
    expect(request!.body.messages.at(-1).content).toBe('Attached file "data.csv":\na,b\n1,2');
  });

  it('6 files → 400 and nothing stored', async () => {
    const w = await chatWorld(t);
    const files = Array.from({ length: 6 }, (_, i) => ({ name: `f${i}.txt`, type: 'text/plain', data: `file ${i}` }));
    const res = await t.request('POST', `${w.base}stream/`, { as: w.alice, body: form('Too many', files) });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json().code).toBe('too_many_files');
    expect(await messageRows(t, w.chat.id)).toHaveLength(0);
    expect(storedFiles(w)).toHaveLength(0);
    expect(fake.requests).toHaveLength(0);
  });

  it('a file over the plan’s max_file_size_bytes → 402 file_too_large and nothing stored', async () => {
    const w = await chatWorld(t);
    const limit = t.deps.plans.free.max_file_size_bytes;
    expect(limit).toBe(10 * 1024 * 1024);
    const big = Buffer.alloc(limit + 1, 0x61);
    const res = await t.request('POST', `${w.base}stream/`, {
      as: w.alice,
      body: form('Big', [
        { name: 'small.txt', type: 'text/plain', data: 'fine' },
        { name: 'big.txt', type: 'text/plain', data: big },
      ]),
    });
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('file_too_large');
    expect(await messageRows(t, w.chat.id)).toHaveLength(0);
    expect(storedFiles(w)).toHaveLength(0);
    expect(fake.requests).toHaveLength(0);
  });

  it('a multipart send with a bad stream_id or a refused call stores nothing', async () => {
    const w = await chatWorld(t);
    const bad = await t.request('POST', `${w.base}stream/`, {
      as: w.alice,
      body: form('Hi', [{ name: 'a.txt', type: 'text/plain', data: 'x' }], { stream_id: 'no spaces allowed' }),
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toHaveProperty('stream_id');
    await recordUsage(t, w.ws.id, 5);
    const broke = await t.request('POST', `${w.base}stream/`, { as: w.alice, body: form('Hi', [{ name: 'a.txt', type: 'text/plain', data: 'x' }]) });
    expect(broke.statusCode).toBe(402);
    expect(storedFiles(w)).toHaveLength(0);
    expect(await messageRows(t, w.chat.id)).toHaveLength(0);
  });

  it('the billing gate runs before any file is read: with the credit used up, even an oversized file gets credit_exhausted', async () => {
    const w = await chatWorld(t);
    await recordUsage(t, w.ws.id, 5);
    const big = Buffer.alloc(t.deps.plans.free.max_file_size_bytes + 1, 0x61);
    const res = await t.request('POST', `${w.base}stream/`, { as: w.alice, body: form('Big', [{ name: 'big.txt', type: 'text/plain', data: big }]) });
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('credit_exhausted');
    expect(storedFiles(w)).toHaveLength(0);
    expect(await messageRows(t, w.chat.id)).toHaveLength(0);
  });
});
