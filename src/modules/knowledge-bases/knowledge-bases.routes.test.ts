import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { createKb, kbsBase, LIFTED_THROTTLES, newDocument } from '../../../test/support/documents.js';
import { addMember, addTeamMember, newTeam, newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { chatKnowledgeBases, knowledgeBaseDocuments, knowledgeBases, knowledgeBaseTeamAccess } from './knowledge-bases.table.js';

const t = useTestApp({ ...LIFTED_THROTTLES });

/**
 * A workspace with its owner, an admin, three plain members (alice creates most knowledge
 * bases; carol is in `team`), an outsider with a workspace of their own, and `otherTeam` in
 * that other workspace.
 */
async function setup() {
  const [owner, admin, alice, bob, carol, outsider] = await Promise.all([
    newUser(t),
    newUser(t),
    newUser(t),
    newUser(t),
    newUser(t),
    newUser(t),
  ]);
  const ws = await newWorkspace(t, owner!);
  const otherWs = await newWorkspace(t, outsider!, 'Elsewhere');
  await addMember(t, ws, admin!, 'admin');
  await addMember(t, ws, alice!);
  await addMember(t, ws, bob!);
  await addMember(t, ws, carol!);
  const team = await newTeam(t, ws);
  await addTeamMember(t, team, carol!);
  const otherTeam = await newTeam(t, otherWs);
  return {
    owner: owner!,
    admin: admin!,
    alice: alice!,
    bob: bob!,
    carol: carol!,
    outsider: outsider!,
    ws,
    otherWs,
    team,
    otherTeam,
    base: kbsBase(ws.id),
  };
}

const db = () => t.deps.database.db;
const kbRow = async (id: string) => (await db().select().from(knowledgeBases).where(eq(knowledgeBases.id, id)))[0];
const linksOf = async (kbId: string) =>
  (await db().select().from(knowledgeBaseDocuments).where(eq(knowledgeBaseDocuments.knowledgeBaseId, kbId))).map((r) => r.documentId);

describe('create and read', () => {
  it('creates a knowledge base owned by its creator', async () => {
    const { alice, ws, base } = await setup();
    const res = await t.post(base, { name: ' Handbook ', description: 'Company rules' }, alice);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({
      id: expect.any(String),
      workspace: ws.id,
      name: 'Handbook',
      description: 'Company rules',
      is_shared_with_workspace: false,
      created_by: alice.id,
      document_count: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await kbRow(res.json().id)).toMatchObject({ workspaceId: ws.id, createdBy: alice.id, isSharedWithWorkspace: false });
  });

  it.each([
    ['no name', {}, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a name over 200 characters', { name: 'x'.repeat(201) }, 'name'],
    ['a description over 5000 characters', { name: 'Ok', description: 'x'.repeat(5001) }, 'description'],
    ['a non-boolean sharing flag', { name: 'Ok', is_shared_with_workspace: 'yes' }, 'is_shared_with_workspace'],
  ])('refuses %s with a JSON 400 and creates nothing', async (_label, body, field) => {
    const { alice, base } = await setup();
    const res = await t.post(base, body, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'validation_error', errors: { [field]: expect.any(Array) } });
    expect(await db().select().from(knowledgeBases)).toEqual([]);
  });

  it('refuses malformed JSON with 400', async () => {
    const { alice, base } = await setup();
    const res = await t.request('POST', base, { as: alice, body: '{"name":', headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('parse_error');
  });

  it('lists what each caller may read: own, shared, team rules; owner and admins see all', async () => {
    const { owner, admin, alice, bob, carol, team, ws, base } = await setup();
    const own = await createKb(t, ws.id, alice, { name: 'Alice private' });
    const shared = await createKb(t, ws.id, alice, { name: 'Alice shared', is_shared_with_workspace: true });
    const teamKb = await createKb(t, ws.id, owner, { name: 'Team only' });
    const ownerPrivate = await createKb(t, ws.id, owner, { name: 'Owner private' });
    expect((await t.post(`${base}${teamKb.id}/team-access/`, { team: team.id, permission: 'read' }, owner)).statusCode).toBe(200);

    const names = async (as: TestUser) => {
      const res = await t.get(base, as);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ count: body.results.length, next: null, previous: null });
      return body.results.map((kb: { name: string }) => kb.name).sort();
    };
    const all = [own, shared, teamKb, ownerPrivate].map((kb) => kb.name).sort();
    expect(await names(owner)).toEqual(all);
    expect(await names(admin)).toEqual(all);
    expect(await names(alice)).toEqual(['Alice private', 'Alice shared']);
    expect(await names(bob)).toEqual(['Alice shared']);
    expect(await names(carol)).toEqual(['Alice shared', 'Team only']);
  });

  it('paginates with limit and offset', async () => {
    const { alice, ws, base } = await setup();
    for (const name of ['A', 'B', 'C']) await createKb(t, ws.id, alice, { name });
    const res = await t.get(`${base}?limit=2&offset=1`, alice);
    expect(res.json()).toMatchObject({ count: 3, previous: expect.any(String), next: null });
    expect(res.json().results).toHaveLength(2);
  });

  it('retrieves for readers; 404 for members who may not read it; 403 for non-members', async () => {
    const { owner, admin, alice, bob, outsider, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    for (const as of [alice, owner, admin]) expect((await t.get(`${base}${kb.id}/`, as)).statusCode).toBe(200);
    expect((await t.get(`${base}${kb.id}/`, bob)).statusCode).toBe(404);
    expect((await t.get(`${base}${kb.id}/`, outsider)).statusCode).toBe(403);
    expect((await t.get(`${base}${kb.id}/`, null)).statusCode).toBe(403);
    expect((await t.get(`${base}not-a-uuid/`, alice)).statusCode).toBe(404);
    expect((await t.get(`${base}00000000-0000-4000-8000-000000000000/`, alice)).statusCode).toBe(404);
  });

  it('does not find a knowledge base through another workspace', async () => {
    const { alice, outsider, otherWs, ws } = await setup();
    const kb = await createKb(t, ws.id, alice);
    expect((await t.get(`${kbsBase(otherWs.id)}${kb.id}/`, outsider)).statusCode).toBe(404);
  });
});

describe('update and delete', () => {
  it('lets the creator, the owner and admins update; others who can read get 403', async () => {
    const { owner, admin, alice, bob, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    const renamed = await t.put(`${base}${kb.id}/`, { name: 'Renamed', description: 'New' }, alice);
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'Renamed', description: 'New', is_shared_with_workspace: true });
    expect((await t.patch(`${base}${kb.id}/`, { description: 'By owner' }, owner)).statusCode).toBe(200);
    expect((await t.patch(`${base}${kb.id}/`, { description: 'By admin' }, admin)).statusCode).toBe(200);

    const refused = await t.put(`${base}${kb.id}/`, { name: 'Bob was here' }, bob);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('kb_read_only');
    expect(await kbRow(kb.id)).toMatchObject({ name: 'Renamed', description: 'By admin' });
  });

  it('refuses a bad update with 400 and changes nothing', async () => {
    const { alice, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const res = await t.patch(`${base}${kb.id}/`, { name: '' }, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'validation_error', errors: { name: expect.any(Array) } });
    expect((await kbRow(kb.id))!.name).toBe('Handbook');
  });

  it('deletes for the creator, owner or admin (documents stay); readers and writers via teams get 403', async () => {
    const { owner, admin, alice, bob, carol, team, ws, base } = await setup();
    const doc = await newDocument(t, ws.id, alice);
    const kb = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    await t.post(`${base}${kb.id}/add-documents/`, { document_ids: [doc.id] }, alice);
    await t.post(`${base}${kb.id}/team-access/`, { team: team.id, permission: 'write' }, alice);

    expect((await t.delete(`${base}${kb.id}/`, bob)).statusCode).toBe(403);
    expect((await t.delete(`${base}${kb.id}/`, carol)).statusCode).toBe(403);
    expect((await t.delete(`${base}${kb.id}/`, alice)).statusCode).toBe(204);
    expect(await kbRow(kb.id)).toBeUndefined();
    expect(await db().select().from(knowledgeBaseDocuments)).toEqual([]);
    expect(await db().select().from(knowledgeBaseTeamAccess)).toEqual([]);
    expect((await t.get(`/api/workspaces/${ws.id}/documents/${doc.id}/`, alice)).statusCode).toBe(200);

    for (const as of [owner, admin]) {
      const other = await createKb(t, ws.id, alice);
      expect((await t.delete(`${base}${other.id}/`, as)).statusCode).toBe(204);
    }
    const hidden = await createKb(t, ws.id, alice);
    expect((await t.delete(`${base}${hidden.id}/`, bob)).statusCode).toBe(404);
  });
});

describe('team access', () => {
  it('grants read, then write, then revokes; team members follow the rule', async () => {
    const { alice, carol, team, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    expect((await t.get(`${base}${kb.id}/`, carol)).statusCode).toBe(404);

    const granted = await t.post(`${base}${kb.id}/team-access/`, { team: team.id, permission: 'read' }, alice);
    expect(granted.statusCode, granted.body).toBe(200);
    expect(granted.json()).toEqual([
      { id: expect.any(String), team: team.id, team_name: team.name, permission: 'read', created_at: expect.any(String) },
    ]);
    expect((await t.get(`${base}${kb.id}/`, carol)).statusCode).toBe(200);
    expect((await t.get(`${base}${kb.id}/team-access/`, carol)).json()).toEqual(granted.json());
    expect((await t.patch(`${base}${kb.id}/`, { name: 'Carol' }, carol)).statusCode).toBe(403);

    const upgraded = await t.post(`${base}${kb.id}/team-access/`, { team: team.id, permission: 'write' }, alice);
    expect(upgraded.json()).toEqual([expect.objectContaining({ team: team.id, permission: 'write' })]);
    expect(await db().select().from(knowledgeBaseTeamAccess)).toHaveLength(1);
    expect((await t.patch(`${base}${kb.id}/`, { name: 'Carol' }, carol)).statusCode).toBe(200);
    const doc = await newDocument(t, ws.id, carol);
    expect((await t.post(`${base}${kb.id}/add-documents/`, { document_ids: [doc.id] }, carol)).statusCode).toBe(200);
    // Writing is not managing: deleting and rules stay with the creator, owner and admins.
    expect((await t.delete(`${base}${kb.id}/`, carol)).statusCode).toBe(403);
    expect((await t.post(`${base}${kb.id}/team-access/`, { team: team.id, permission: 'read' }, carol)).statusCode).toBe(403);

    const revoked = await t.delete(`${base}${kb.id}/team-access/`, alice, { team: team.id });
    expect(revoked.statusCode, revoked.body).toBe(204);
    expect(await db().select().from(knowledgeBaseTeamAccess)).toEqual([]);
    expect((await t.get(`${base}${kb.id}/`, carol)).statusCode).toBe(404);
  });

  it('lets the owner and admins manage rules on a member’s knowledge base', async () => {
    const { owner, admin, alice, team, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    expect((await t.post(`${base}${kb.id}/team-access/`, { team: team.id, permission: 'read' }, admin)).statusCode).toBe(200);
    expect((await t.delete(`${base}${kb.id}/team-access/`, owner, { team: team.id })).statusCode).toBe(204);
  });

  it('refuses a team of another workspace with 400 and records nothing', async () => {
    const { alice, otherTeam, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const res = await t.post(`${base}${kb.id}/team-access/`, { team: otherTeam.id, permission: 'read' }, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_team', errors: { team: expect.any(Array) } });
    expect(await db().select().from(knowledgeBaseTeamAccess)).toEqual([]);
  });

  it.each([
    [{ team: 'nope', permission: 'read' }, 'team'],
    [{ permission: 'read' }, 'team'],
    [{ team: '00000000-0000-4000-8000-000000000000', permission: 'admin' }, 'permission'],
  ])('refuses a bad grant %j with 400', async (body, field) => {
    const { alice, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const res = await t.post(`${base}${kb.id}/team-access/`, body, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toHaveProperty(field);
  });

  it('answers 400 when revoking a rule that does not exist', async () => {
    const { alice, team, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const res = await t.delete(`${base}${kb.id}/team-access/`, alice, { team: team.id });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('rule_not_found');
  });

  it('refuses readers who are not managers (403) and hides private knowledge bases (404)', async () => {
    const { alice, bob, team, ws, base } = await setup();
    const shared = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    const hidden = await createKb(t, ws.id, alice);
    expect((await t.get(`${base}${shared.id}/team-access/`, bob)).statusCode).toBe(200);
    expect((await t.post(`${base}${shared.id}/team-access/`, { team: team.id, permission: 'write' }, bob)).statusCode).toBe(403);
    expect((await t.get(`${base}${hidden.id}/team-access/`, bob)).statusCode).toBe(404);
    expect((await t.post(`${base}${hidden.id}/team-access/`, { team: team.id, permission: 'write' }, bob)).statusCode).toBe(404);
  });

  it('keeps a write-team member from widening access with is_shared_with_workspace', async () => {
    const { alice, carol, team, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    await t.post(`${base}${kb.id}/team-access/`, { team: team.id, permission: 'write' }, alice);
    const res = await t.patch(`${base}${kb.id}/`, { is_shared_with_workspace: true }, carol);
    expect(res.statusCode).toBe(403);
    expect((await kbRow(kb.id))!.isSharedWithWorkspace).toBe(false);
    // Sending the current value back (a full PUT) is fine.
    expect((await t.put(`${base}${kb.id}/`, { name: 'Same', is_shared_with_workspace: false }, carol)).statusCode).toBe(200);
    expect((await t.patch(`${base}${kb.id}/`, { is_shared_with_workspace: true }, alice)).statusCode).toBe(200);
  });
});

describe('documents of a knowledge base', () => {
  it('adds visible documents, lists them, and removes them (the documents stay)', async () => {
    const { alice, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const one = await newDocument(t, ws.id, alice, { name: 'one.txt' });
    const two = await newDocument(t, ws.id, alice, { name: 'two.txt' });

    const added = await t.post(`${base}${kb.id}/add-documents/`, { document_ids: [one.id, two.id, one.id] }, alice);
    expect(added.statusCode, added.body).toBe(200);
    expect(added.json()).toMatchObject({ id: kb.id, document_count: 2 });
    // Adding again is harmless.
    expect((await t.post(`${base}${kb.id}/add-documents/`, { document_ids: [one.id] }, alice)).json().document_count).toBe(2);
    expect((await linksOf(kb.id)).sort()).toEqual([one.id, two.id].sort());

    const listed = await t.get(`${base}${kb.id}/documents/`, alice);
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toMatchObject({ count: 2, next: null, previous: null });
    expect(listed.json().results.map((d: { name: string }) => d.name).sort()).toEqual(['one.txt', 'two.txt']);
    expect(listed.json().results[0]).toMatchObject({ knowledge_base_ids: [kb.id], processing_status: 'pending', uploaded_by: alice.id });

    const removed = await t.post(`${base}${kb.id}/remove-documents/`, { document_ids: [one.id] }, alice);
    expect(removed.statusCode).toBe(200);
    expect(removed.json().document_count).toBe(1);
    expect(await linksOf(kb.id)).toEqual([two.id]);
    expect((await t.get(`/api/workspaces/${ws.id}/documents/${one.id}/`, alice)).json().knowledge_base_ids).toEqual([]);
  });

  it('refuses documents the caller cannot see or of another workspace with 400, linking none of them', async () => {
    const { alice, bob, outsider, otherWs, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const mine = await newDocument(t, ws.id, alice);
    const bobs = await newDocument(t, ws.id, bob);
    const foreign = await newDocument(t, otherWs.id, outsider);
    for (const ids of [[mine.id, bobs.id], [mine.id, foreign.id], [mine.id, '00000000-0000-4000-8000-000000000000']]) {
      const res = await t.post(`${base}${kb.id}/add-documents/`, { document_ids: ids }, alice);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_documents', errors: { document_ids: expect.any(Array) } });
      expect(res.json().errors.document_ids[0]).toContain(ids[1]);
    }
    expect(await linksOf(kb.id)).toEqual([]);
  });

  it.each([[{}], [{ document_ids: [] }], [{ document_ids: ['nope'] }], [{ document_ids: 'x' }]])(
    'refuses a bad body %j with 400',
    async (body) => {
      const { alice, ws, base } = await setup();
      const kb = await createKb(t, ws.id, alice);
      for (const action of ['add-documents', 'remove-documents']) {
        const res = await t.post(`${base}${kb.id}/${action}/`, body, alice);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ code: 'validation_error', errors: expect.any(Object) });
      }
    },
  );

  it('needs write access to add or remove; readers may list', async () => {
    const { alice, bob, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    const doc = await newDocument(t, ws.id, alice);
    const bobsDoc = await newDocument(t, ws.id, bob);
    await t.post(`${base}${kb.id}/add-documents/`, { document_ids: [doc.id] }, alice);
    expect((await t.post(`${base}${kb.id}/add-documents/`, { document_ids: [bobsDoc.id] }, bob)).statusCode).toBe(403);
    expect((await t.post(`${base}${kb.id}/remove-documents/`, { document_ids: [doc.id] }, bob)).statusCode).toBe(403);
    expect(await linksOf(kb.id)).toEqual([doc.id]);
    const listed = await t.get(`${base}${kb.id}/documents/`, bob);
    expect(listed.json().results.map((d: { id: string }) => d.id)).toEqual([doc.id]);
  });

  it('links one document to two knowledge bases without copying anything', async () => {
    const { alice, ws, base } = await setup();
    const doc = await newDocument(t, ws.id, alice);
    const first = await createKb(t, ws.id, alice, { name: 'First' });
    const second = await createKb(t, ws.id, alice, { name: 'Second' });
    await t.post(`${base}${first.id}/add-documents/`, { document_ids: [doc.id] }, alice);
    await t.post(`${base}${second.id}/add-documents/`, { document_ids: [doc.id] }, alice);
    const res = await t.get(`/api/workspaces/${ws.id}/documents/${doc.id}/`, alice);
    expect(res.json().knowledge_base_ids).toEqual([first.id, second.id]);
    expect((await t.get(`/api/workspaces/${ws.id}/documents/`, alice)).json().count).toBe(1);
  });
});

describe('knowledge bases of a chat', () => {
  async function chatOf(as: TestUser, wsId: string, options: { shareWith?: TestUser; isPublic?: boolean } = {}) {
    const chats = t.deps.services.chats;
    const chat = await chats.create(as.id, wsId, { name: 'Chat', system_prompt: '', agent_framework: 'tools', model_parameters: {} });
    if (options.shareWith) await chats.share(as.id, wsId, chat.id, options.shareWith.email);
    if (options.isPublic) await chats.togglePublic(as.id, wsId, chat.id);
    return `/api/workspaces/${wsId}/chats/${chat.id}/knowledge-bases/`;
  }

  it('attaches readable knowledge bases, lists and detaches them', async () => {
    const { alice, ws } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const other = await createKb(t, ws.id, alice, { name: 'Other' });
    const chat = await chatOf(alice, ws.id);
    expect((await t.get(chat, alice)).json()).toEqual([]);

    const attached = await t.post(`${chat}attach/`, { knowledge_base_ids: [kb.id, other.id, kb.id] }, alice);
    expect(attached.statusCode, attached.body).toBe(200);
    expect(attached.json().map((k: { id: string }) => k.id)).toEqual([kb.id, other.id]);
    expect(attached.json()[0]).toMatchObject({ name: 'Handbook', document_count: 0 });
    // Attaching again is harmless.
    expect((await t.post(`${chat}attach/`, { knowledge_base_ids: [kb.id] }, alice)).json()).toHaveLength(2);
    expect((await t.get(chat, alice)).json().map((k: { id: string }) => k.id)).toEqual([kb.id, other.id]);

    const detached = await t.post(`${chat}detach/`, { knowledge_base_ids: [kb.id] }, alice);
    expect(detached.statusCode).toBe(200);
    expect(detached.json().map((k: { id: string }) => k.id)).toEqual([other.id]);
    expect(await db().select().from(chatKnowledgeBases)).toHaveLength(1);
  });

  it('refuses knowledge bases the caller cannot read or of another workspace with 400, attaching none', async () => {
    const { owner, alice, outsider, otherWs, ws } = await setup();
    const mine = await createKb(t, ws.id, alice);
    const ownerPrivate = await createKb(t, ws.id, owner);
    const foreign = await createKb(t, otherWs.id, outsider);
    const chat = await chatOf(alice, ws.id);
    for (const bad of [ownerPrivate.id, foreign.id]) {
      const res = await t.post(`${chat}attach/`, { knowledge_base_ids: [mine.id, bad] }, alice);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_knowledge_bases', errors: { knowledge_base_ids: expect.any(Array) } });
    }
    expect(await db().select().from(chatKnowledgeBases)).toEqual([]);
    expect((await t.post(`${chat}attach/`, { knowledge_base_ids: [] }, alice)).statusCode).toBe(400);
  });

  it('lets people the chat is shared with attach; readers of a public chat may list but not attach', async () => {
    const { alice, bob, carol, ws } = await setup();
    const kb = await createKb(t, ws.id, bob, { is_shared_with_workspace: true });
    const chat = await chatOf(alice, ws.id, { shareWith: bob, isPublic: true });
    expect((await t.post(`${chat}attach/`, { knowledge_base_ids: [kb.id] }, bob)).statusCode).toBe(200);
    expect((await t.get(chat, carol)).statusCode).toBe(200);
    expect((await t.post(`${chat}detach/`, { knowledge_base_ids: [kb.id] }, carol)).statusCode).toBe(403);
    expect((await t.post(`${chat}attach/`, { knowledge_base_ids: [kb.id] }, carol)).statusCode).toBe(403);
    expect(await db().select().from(chatKnowledgeBases)).toHaveLength(1);
  });

  it('drops the attachment when the knowledge base is deleted', async () => {
    const { alice, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const chat = await chatOf(alice, ws.id);
    await t.post(`${chat}attach/`, { knowledge_base_ids: [kb.id] }, alice);
    await t.delete(`${base}${kb.id}/`, alice);
    expect((await t.get(chat, alice)).json()).toEqual([]);
  });
});

describe('archived workspace', () => {
  it('still reads but refuses every write with 409', async () => {
    const { owner, alice, team, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const doc = await newDocument(t, ws.id, alice);
    const chats = t.deps.services.chats;
    const chat = await chats.create(alice.id, ws.id, { name: 'C', system_prompt: '', agent_framework: 'tools', model_parameters: {} });
    expect((await t.patch(`/api/workspaces/${ws.id}/`, { status: 'archived' }, owner)).statusCode).toBe(200);

    const writes: Array<[string, string, unknown]> = [
      ['POST', base, { name: 'New' }],
      ['PUT', `${base}${kb.id}/`, { name: 'Renamed' }],
      ['PATCH', `${base}${kb.id}/`, { name: 'Renamed' }],
      ['DELETE', `${base}${kb.id}/`, undefined],
      ['POST', `${base}${kb.id}/add-documents/`, { document_ids: [doc.id] }],
      ['POST', `${base}${kb.id}/remove-documents/`, { document_ids: [doc.id] }],
      ['POST', `${base}${kb.id}/team-access/`, { team: team.id, permission: 'read' }],
      ['DELETE', `${base}${kb.id}/team-access/`, { team: team.id }],
      ['POST', `/api/workspaces/${ws.id}/chats/${chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: [kb.id] }],
      ['POST', `/api/workspaces/${ws.id}/chats/${chat.id}/knowledge-bases/detach/`, { knowledge_base_ids: [kb.id] }],
    ];
    for (const [method, url, body] of writes) {
      const res = await t.request(method as 'POST', url, { as: alice, body });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(409);
      expect(res.json().code).toBe('workspace_archived');
    }
    expect(await db().select().from(knowledgeBases)).toHaveLength(1);
    expect(await linksOf(kb.id)).toEqual([]);
    for (const url of [base, `${base}${kb.id}/`, `${base}${kb.id}/documents/`, `${base}${kb.id}/team-access/`]) {
      expect((await t.get(url, alice)).statusCode).toBe(200);
    }
  });
});
