import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { recordUsage, subscribe } from '../../../test/support/billing.js';
import { addMember, newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { messages } from '../messages/messages.table.js';

const t = useTestApp();

async function setup() {
  const owner = await newUser(t);
  const alice = await newUser(t);
  const bob = await newUser(t);
  const ws = await newWorkspace(t, owner);
  const aliceMembership = await addMember(t, ws, alice);
  await addMember(t, ws, bob);
  const base = `/api/workspaces/${ws.id}/chats/`;
  return { owner, alice, bob, ws, base, aliceMembership };
}

async function createChat(base: string, as: TestUser, body: Record<string, unknown> = {}) {
  const res = await t.post(base, { name: 'Plans', ...body }, as);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; link_uuid: string };
}

describe('create', () => {
  it('defaults to the plan’s model and derives the provider', async () => {
    const { alice, base, ws } = await setup();
    const res = await t.post(base, { name: 'Hello', system_prompt: 'Be brief.', temperature: 0.3 }, alice);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      id: expect.any(String),
      workspace: ws.id,
      owner: alice.id,
      name: 'Hello',
      ai_model: 'gpt-4.1-mini',
      ai_provider: 'openai',
      system_prompt: 'Be brief.',
      temperature: 0.3,
      agent_framework: 'tools',
      model_parameters: {},
      is_public: false,
      link_uuid: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('derives anthropic for a Claude model the plan includes', async () => {
    const { alice, base, ws, owner } = await setup();
    await subscribe(t, ws.id, 'pro', { payer: owner });
    const chat = await t.post(base, { ai_model: 'claude-sonnet-4-5' }, alice);
    expect(chat.json()).toMatchObject({ ai_model: 'claude-sonnet-4-5', ai_provider: 'anthropic' });
  });

  it('refuses a model outside the plan with 402 model_not_in_plan', async () => {
    const { alice, base } = await setup();
    const res = await t.post(base, { ai_model: 'o3' }, alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('model_not_in_plan');
    expect((await t.get(base, alice)).json().count).toBe(0);
  });

  it('refuses an unknown model with 400', async () => {
    const { alice, base } = await setup();
    const res = await t.post(base, { ai_model: 'gpt-99' }, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'unknown_model', errors: { ai_model: expect.any(Array) } });
  });

  it('refuses with 402 credit_exhausted when the credit is used up', async () => {
    const { alice, base, ws } = await setup();
    await recordUsage(t, ws.id, 1);
    const res = await t.post(base, {}, alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('credit_exhausted');
  });

  it.each([
    [{ temperature: 3 }, 'temperature'],
    [{ agent_framework: 'crew' }, 'agent_framework'],
    [{ model_parameters: { unknown_knob: 1 } }, 'model_parameters'],
    [{ name: 'x'.repeat(201) }, 'name'],
  ])('refuses %j with 400', async (body, field) => {
    const { alice, base } = await setup();
    const res = await t.post(base, body, alice);
    expect(res.statusCode).toBe(400);
    expect(Object.keys(res.json().errors).some((k) => k.startsWith(field))).toBe(true);
  });

  it('refuses 409 in an archived workspace', async () => {
    const { owner, base, ws } = await setup();
    await t.patch(`/api/workspaces/${ws.id}/`, { status: 'archived' }, owner);
    expect((await t.post(base, {}, owner)).statusCode).toBe(409);
  });
});

describe('list and retrieve', () => {
  it('lists own, shared-with-me and public chats, not others’ private ones', async () => {
    const { alice, bob, base } = await setup();
    const mine = await createChat(base, alice, { name: 'mine' });
    const shared = await createChat(base, bob, { name: 'shared' });
    const pub = await createChat(base, bob, { name: 'public' });
    await createChat(base, bob, { name: 'private' });
    await t.post(`${base}${shared.id}/share/`, { email: alice.email }, bob);
    await t.post(`${base}${pub.id}/toggle-public/`, {}, bob);
    const names = (await t.get(base, alice)).json().results.map((c: { name: string }) => c.name).sort();
    expect(names).toEqual(['mine', 'public', 'shared']);
    expect(mine.id).toBeDefined();
  });

  it('pages through the visible chats newest first, each once, with the count on every page', async () => {
    const { owner, alice, bob, base } = await setup();
    const expected: string[] = [];
    for (let i = 0; i < 3; i += 1) expected.push((await createChat(base, alice, { name: `mine ${i}` })).id);
    const minePublic = await createChat(base, alice, { name: 'mine, public' });
    await t.post(`${base}${minePublic.id}/toggle-public/`, {}, alice);
    expected.push(minePublic.id);
    for (let i = 0; i < 3; i += 1) {
      const pub = await createChat(base, bob, { name: `public ${i}` });
      await t.post(`${base}${pub.id}/toggle-public/`, {}, bob);
      const shared = await createChat(base, owner, { name: `shared ${i}` });
      await t.post(`${base}${shared.id}/share/`, { email: alice.email }, owner);
      await createChat(base, bob, { name: `private ${i}` });
      expected.push(pub.id, shared.id);
    }
    // Shared with her and public too: listed once.
    const both = await createChat(base, bob, { name: 'shared and public' });
    await t.post(`${base}${both.id}/share/`, { email: alice.email }, bob);
    await t.post(`${base}${both.id}/toggle-public/`, {}, bob);
    expected.push(both.id);
    // Her chats and a chat shared with her in another workspace are not in this list.
    const elsewhere = await newWorkspace(t, owner);
    await addMember(t, elsewhere, alice);
    const otherBase = `/api/workspaces/${elsewhere.id}/chats/`;
    await createChat(otherBase, alice, { name: 'elsewhere, mine' });
    const otherShared = await createChat(otherBase, owner, { name: 'elsewhere, shared' });
    await t.post(`${otherBase}${otherShared.id}/share/`, { email: alice.email }, owner);

    const all = (await t.get(`${base}?limit=200`, alice)).json();
    expect(all.count).toBe(expected.length);
    expect([...all.results.map((c: { id: string }) => c.id)].sort()).toEqual([...expected].sort());
    const order = all.results.map((c: { updated_at: string; id: string }) => [c.updated_at, c.id].join(' '));
    expect(order).toEqual([...order].sort().reverse());
    const paged: string[] = [];
    for (let offset = 0; offset < expected.length; offset += 3) {
      const page = (await t.get(`${base}?limit=3&offset=${offset}`, alice)).json();
      expect(page.count).toBe(expected.length);
      paged.push(...page.results.map((c: { id: string }) => c.id));
    }
    expect(paged).toEqual(all.results.map((c: { id: string }) => c.id));
    const past = (await t.get(`${base}?limit=3&offset=${expected.length + 5}`, alice)).json();
    expect(past).toMatchObject({ count: expected.length, results: [] });
    // Bob: his three public and three private chats, the one shared with her, and her public one.
    expect((await t.get(base, bob)).json().count).toBe(8);
  });

  it('answers 404 for a private chat the caller cannot read, 403 for outsiders', async () => {
    const { alice, bob, base } = await setup();
    const chat = await createChat(base, bob);
    expect((await t.get(`${base}${chat.id}/`, alice)).statusCode).toBe(404);
    expect((await t.get(`${base}${chat.id}/`, await newUser(t))).statusCode).toBe(403);
    expect((await t.get(`${base}not-a-uuid/`, alice)).statusCode).toBe(404);
  });
});

describe('owner-only operations', () => {
  it('lets the owner update; a reader gets 403, a non-reader 404', async () => {
    const { alice, bob, base } = await setup();
    const chat = await createChat(base, alice);
    const updated = await t.patch(`${base}${chat.id}/`, { name: 'Renamed', model_parameters: { seed: 7 } }, alice);
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({ name: 'Renamed', model_parameters: { seed: 7 } });
    expect((await t.patch(`${base}${chat.id}/`, { name: 'x' }, bob)).statusCode).toBe(404);
    await t.post(`${base}${chat.id}/toggle-public/`, {}, alice);
    const asReader = await t.patch(`${base}${chat.id}/`, { name: 'x' }, bob);
    expect(asReader.statusCode).toBe(403);
    expect(asReader.json().code).toBe('not_chat_owner');
    expect((await t.delete(`${base}${chat.id}/`, bob)).statusCode).toBe(403);
    expect((await t.post(`${base}${chat.id}/toggle-public/`, {}, bob)).statusCode).toBe(403);
  });

  it('re-checks the plan when switching the model', async () => {
    const { alice, base } = await setup();
    const chat = await createChat(base, alice);
    const res = await t.put(`${base}${chat.id}/`, { ai_model: 'gpt-4.1' }, alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('model_not_in_plan');
    const ok = await t.put(`${base}${chat.id}/`, { ai_model: 'claude-haiku-4-5' }, alice);
    expect(ok.json()).toMatchObject({ ai_model: 'claude-haiku-4-5', ai_provider: 'anthropic' });
  });

  it('re-checks the credit when switching the model, not on other updates', async () => {
    const { alice, base, ws } = await setup();
    const chat = await createChat(base, alice);
    await recordUsage(t, ws.id, 5);
    expect((await t.patch(`${base}${chat.id}/`, { ai_model: 'gpt-4o-mini' }, alice)).json().code).toBe('credit_exhausted');
    expect((await t.patch(`${base}${chat.id}/`, { name: 'still fine' }, alice)).statusCode).toBe(200);
  });

  it('deletes the chat with its messages', async () => {
    const { alice, base } = await setup();
    const chat = await createChat(base, alice);
    await t.deps.database.db.insert(messages).values({ sessionId: chat.id, role: 'user', content: 'hi', authorId: alice.id });
    expect((await t.delete(`${base}${chat.id}/`, alice)).statusCode).toBe(204);
    expect((await t.get(`${base}${chat.id}/`, alice)).statusCode).toBe(404);
    expect(await t.deps.database.db.select().from(messages)).toEqual([]);
  });

  it('toggle-public flips and returns the link', async () => {
    const { alice, base } = await setup();
    const chat = await createChat(base, alice);
    const on = await t.post(`${base}${chat.id}/toggle-public/`, {}, alice);
    expect(on.json()).toEqual({ is_public: true, link_uuid: chat.link_uuid });
    const off = await t.post(`${base}${chat.id}/toggle-public/`, {}, alice);
    expect(off.json()).toEqual({ is_public: false, link_uuid: chat.link_uuid });
  });
});

describe('sharing', () => {
  it('shares with a member by email, idempotently, and lists shares for readers', async () => {
    const { alice, bob, base } = await setup();
    const chat = await createChat(base, alice);
    const first = await t.post(`${base}${chat.id}/share/`, { email: bob.email.toUpperCase() }, alice);
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ id: expect.any(String), user: { id: bob.id, email: bob.email, name: bob.name }, created_at: expect.any(String) });
    expect((await t.post(`${base}${chat.id}/share/`, { email: bob.email }, alice)).statusCode).toBe(200);
    const list = await t.get(`${base}${chat.id}/shares/`, bob);
    expect(list.statusCode).toBe(200);
    expect(list.json().count).toBe(1);
    expect((await t.get(`${base}${chat.id}/`, bob)).statusCode).toBe(200);
  });

  it.each(['owner', 'outsider', 'unknown'])('refuses sharing with the %s', async (who) => {
    const { alice, base } = await setup();
    const chat = await createChat(base, alice);
    const outsider = await newUser(t);
    const email = who === 'owner' ? alice.email : who === 'outsider' ? outsider.email : 'ghost@example.com';
    const res = await t.post(`${base}${chat.id}/share/`, { email }, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_share_target');
  });

  it('revokes a share; revoking again is 400', async () => {
    const { alice, bob, base } = await setup();
    const chat = await createChat(base, alice);
    await t.post(`${base}${chat.id}/share/`, { email: bob.email }, alice);
    expect((await t.post(`${base}${chat.id}/revoke-share/`, { email: bob.email }, alice)).statusCode).toBe(204);
    expect((await t.get(`${base}${chat.id}/`, bob)).statusCode).toBe(404);
    expect((await t.post(`${base}${chat.id}/revoke-share/`, { email: bob.email }, alice)).statusCode).toBe(400);
  });

  it('a sharee cannot share further', async () => {
    const { alice, bob, owner, base } = await setup();
    const chat = await createChat(base, alice);
    await t.post(`${base}${chat.id}/share/`, { email: bob.email }, alice);
    expect((await t.post(`${base}${chat.id}/share/`, { email: owner.email }, bob)).statusCode).toBe(403);
  });
});

describe('the shared link', () => {
  it('is open to anyone while public, and hides settings, workspace and authors', async () => {
    const { alice, base, ws } = await setup();
    const chat = await createChat(base, alice, {
      name: 'Open chat',
      system_prompt: 'SECRET-PROMPT',
      temperature: 0.77,
      model_parameters: { seed: 424242 },
    });
    const db = t.deps.database.db;
    const [question] = await db.insert(messages).values({ sessionId: chat.id, role: 'user', content: 'Q?', authorId: alice.id }).returning();
    await db.insert(messages).values({ sessionId: chat.id, role: 'assistant', content: 'A.', parentId: question!.id, aiModel: 'gpt-4.1-mini' });
    await t.post(`${base}${chat.id}/toggle-public/`, {}, alice);

    const res = await t.get(`/api/chats/shared/${chat.link_uuid}/`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ name: 'Open chat', ai_model: 'gpt-4.1-mini', is_public: true });
    expect(body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'Q?'],
      ['assistant', 'A.'],
    ]);
    const text = res.body;
    for (const hidden of ['SECRET-PROMPT', ws.id, alice.email, 'system_prompt', 'temperature', 'model_parameters', 'workspace', 'author', 'owner']) {
      expect(text, hidden).not.toContain(hidden);
    }
    // The settings' numbers as JSON values, not as digits inside a timestamp or an id
    // (a created_at of "...:40.776Z" contains "0.77").
    for (const hidden of [/(?<![\w.-])0\.77(?![\w.])/, /(?<![\w.-])424242(?![\w.])/]) {
      expect(text, String(hidden)).not.toMatch(hidden);
    }
    expect(text).not.toContain(`"${alice.id}"`);
    expect(Object.keys(body.messages[0]).sort()).toEqual(['content', 'created_at', 'id', 'parent', 'role', 'stopped']);
  });

  it('for a chat that is not public, opens only for the owner and sharees while they are members', async () => {
    const { alice, bob, owner, base, ws } = await setup();
    const chat = await createChat(base, alice);
    const url = `/api/chats/shared/${chat.link_uuid}/`;
    await t.post(`${base}${chat.id}/share/`, { email: bob.email }, alice);
    expect((await t.get(url)).statusCode).toBe(404);
    expect((await t.get(url, await newUser(t))).statusCode).toBe(404);
    expect((await t.get(url, owner)).statusCode).toBe(404);
    expect((await t.get(url, alice)).statusCode).toBe(200);
    expect((await t.get(url, bob)).statusCode).toBe(200);
    await t.post(`/api/workspaces/${ws.id}/leave/`, {}, bob);
    expect((await t.get(url, bob)).statusCode).toBe(404);
  });

  it('answers 404 for an unknown or malformed link', async () => {
    expect((await t.get('/api/chats/shared/00000000-0000-4000-8000-000000000000/')).statusCode).toBe(404);
    expect((await t.get('/api/chats/shared/nope/')).statusCode).toBe(404);
  });
});
