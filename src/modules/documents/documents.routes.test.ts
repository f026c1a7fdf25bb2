import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { recordUsage } from '../../../test/support/billing.js';
import {
  createKb,
  docsBase,
  fixture,
  ingestFile,
  kbsBase,
  LIFTED_THROTTLES,
  newDocument,
  readyTextDocument,
  uploadFile,
} from '../../../test/support/documents.js';
import { addMember, addTeamMember, newTeam, newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { knowledgeBaseDocuments } from '../knowledge-bases/knowledge-bases.table.js';
import { documentChunks, documents, ingestionTasks } from './documents.table.js';

const t = useTestApp({ ...LIFTED_THROTTLES });

afterEach(() => {
  vi.restoreAllMocks();
});

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
  await newWorkspace(t, outsider!, 'Elsewhere');
  await addMember(t, ws, admin!, 'admin');
  await addMember(t, ws, alice!);
  await addMember(t, ws, bob!);
  await addMember(t, ws, carol!);
  return { owner: owner!, admin: admin!, alice: alice!, bob: bob!, carol: carol!, outsider: outsider!, ws, base: docsBase(ws.id) };
}

const db = () => t.deps.database.db;
const documentRow = async (id: string) => (await db().select().from(documents).where(eq(documents.id, id)))[0];
const chunkRows = (id: string) => db().select().from(documentChunks).where(eq(documentChunks.documentId, id)).orderBy(documentChunks.chunkIndex);
const taskRows = (id: string) => db().select().from(ingestionTasks).where(eq(ingestionTasks.documentId, id)).orderBy(ingestionTasks.createdAt);

/** Holds the next ingestion inside its read of the stored file until `release()` (the file is already open). */
function holdNextIngestion() {
  let entered!: () => void;
  let release!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  const storage = t.deps.storage;
  const original = storage.get.bind(storage);
  vi.spyOn(storage, 'get').mockImplementationOnce(async (key: string) => {
    const stream = await original(key);
    entered();
    await gate;
    return stream;
  });
  return { inside, release };
}

describe('visibility', () => {
  it('shows a member their own uploads and documents of knowledge bases they can read; owner and admins see all', async () => {
    const { owner, admin, alice, bob, carol, ws, base } = await setup();
    const a = await newDocument(t, ws.id, alice, { name: 'alice.txt' });
    const b = await newDocument(t, ws.id, bob, { name: 'bob.txt' });
    const c = await newDocument(t, ws.id, carol, { name: 'carol.txt' });
    const names = async (as: TestUser) => {
      const res = await t.get(base, as);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ count: res.json().results.length, next: null, previous: null });
      return res.json().results.map((d: { name: string }) => d.name).sort();
    };
    expect(await names(owner)).toEqual(['alice.txt', 'bob.txt', 'carol.txt']);
    expect(await names(admin)).toEqual(['alice.txt', 'bob.txt', 'carol.txt']);
    expect(await names(alice)).toEqual(['alice.txt']);
    expect(await names(bob)).toEqual(['bob.txt']);

    // Alice shares a knowledge base with the workspace; Bob's team gets read access to another.
    const shared = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    await t.post(`${kbsBase(ws.id)}${shared.id}/add-documents/`, { document_ids: [a.id] }, alice);
    const teamKb = await createKb(t, ws.id, carol, { name: 'Team' });
    await t.post(`${kbsBase(ws.id)}${teamKb.id}/add-documents/`, { document_ids: [c.id] }, carol);
    const team = await newTeam(t, ws);
    await addTeamMember(t, team, bob);
    await t.post(`${kbsBase(ws.id)}${teamKb.id}/team-access/`, { team: team.id, permission: 'read' }, carol);

    expect(await names(bob)).toEqual(['alice.txt', 'bob.txt', 'carol.txt']);
    expect(await names(alice)).toEqual(['alice.txt']);
    expect((await t.get(`${base}${c.id}/`, bob)).statusCode).toBe(200);
    expect((await t.get(`${base}${b.id}/`, alice)).statusCode).toBe(404);
  });

  it('retrieves a document with its fields; 404 when hidden or unknown; 403 for non-members', async () => {
    const { alice, bob, outsider, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const doc = await newDocument(t, ws.id, alice, { name: 'plan.txt', knowledge_base_ids: [kb.id] });
    const res = await t.get(`${base}${doc.id}/`, alice);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: doc.id,
      workspace: ws.id,
      name: 'plan.txt',
      content_type: 'text/plain',
      size: 10,
      source_kind: 'upload',
      source_url: null,
      processing_status: 'pending',
      language: null,
      uploaded_by: alice.id,
      knowledge_base_ids: [kb.id],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await t.get(`${base}${doc.id}/`, bob)).statusCode).toBe(404);
    expect((await t.get(`${base}${doc.id}/`, outsider)).statusCode).toBe(403);
    expect((await t.get(`${base}${doc.id}/`, null)).statusCode).toBe(403);
    expect((await t.get(`${base}not-a-uuid/`, alice)).statusCode).toBe(404);
    for (const path of ['processing-status/', 'chunks/', 'download-url/']) {
      expect((await t.get(`${base}${doc.id}/${path}`, bob)).statusCode).toBe(404);
    }
  });
});

describe('update', () => {
  it('renames for the uploader and admins; readers get 403, others 404', async () => {
    const { owner, admin, alice, bob, carol, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    const doc = await newDocument(t, ws.id, alice, { knowledge_base_ids: [kb.id] });
    const hidden = await newDocument(t, ws.id, alice);

    const renamed = await t.patch(`${base}${doc.id}/`, { name: 'Renamed.txt' }, alice);
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ id: doc.id, name: 'Renamed.txt', knowledge_base_ids: [kb.id] });
    expect((await t.put(`${base}${doc.id}/`, { name: 'By admin' }, admin)).statusCode).toBe(200);
    expect((await t.put(`${base}${doc.id}/`, { name: 'By owner' }, owner)).statusCode).toBe(200);

    const refused = await t.patch(`${base}${doc.id}/`, { name: 'Bob' }, bob);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('permission_denied');
    expect((await t.patch(`${base}${hidden.id}/`, { name: 'Carol' }, carol)).statusCode).toBe(404);
    expect((await documentRow(doc.id))!.name).toBe('By owner');
  });

  it('sets the knowledge bases, adding and removing links', async () => {
    const { alice, ws, base } = await setup();
    const one = await createKb(t, ws.id, alice, { name: 'One' });
    const two = await createKb(t, ws.id, alice, { name: 'Two' });
    const doc = await newDocument(t, ws.id, alice, { knowledge_base_ids: [one.id] });
    const res = await t.patch(`${base}${doc.id}/`, { knowledge_base_ids: [two.id] }, alice);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().knowledge_base_ids).toEqual([two.id]);
    const links = await db().select().from(knowledgeBaseDocuments).where(eq(knowledgeBaseDocuments.documentId, doc.id));
    expect(links.map((l) => l.knowledgeBaseId)).toEqual([two.id]);
    expect((await t.patch(`${base}${doc.id}/`, { knowledge_base_ids: [] }, alice)).json().knowledge_base_ids).toEqual([]);
  });

  it('refuses knowledge bases the caller may not write to with 400 and changes nothing', async () => {
    const { owner, alice, ws, base } = await setup();
    const mine = await createKb(t, ws.id, alice);
    const readOnly = await createKb(t, ws.id, owner, { is_shared_with_workspace: true });
    const doc = await newDocument(t, ws.id, alice);
    const res = await t.patch(`${base}${doc.id}/`, { name: 'New name', knowledge_base_ids: [mine.id, readOnly.id] }, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_knowledge_bases', errors: { knowledge_base_ids: expect.any(Array) } });
    expect((await documentRow(doc.id))!.name).toBe('draft.txt');
    expect(await db().select().from(knowledgeBaseDocuments)).toEqual([]);
  });

  it.each([
    ['an empty name', { name: '' }],
    ['a name over 255 characters', { name: 'x'.repeat(256) }],
    ['knowledge_base_ids that are not UUIDs', { knowledge_base_ids: ['nope'] }],
  ])('refuses %s with 400', async (_label, body) => {
    const { alice, ws, base } = await setup();
    const doc = await newDocument(t, ws.id, alice);
    const res = await t.patch(`${base}${doc.id}/`, body, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_error');
    expect((await documentRow(doc.id))!.name).toBe('draft.txt');
  });
});

describe('delete', () => {
  it('removes the document, its chunks, links and stored file (uploader)', async () => {
    const { alice, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const doc = await readyTextDocument(t, ws.id, alice, 'Some text about gardening and tomatoes.', 'garden.txt', [kb.id]);
    const key = (await documentRow(doc.id))!.storageKey;
    expect(await t.deps.storage.head(key)).not.toBeNull();
    expect((await chunkRows(doc.id)).length).toBeGreaterThan(0);

    const res = await t.delete(`${base}${doc.id}/`, alice);
    expect(res.statusCode, res.body).toBe(204);
    expect(await documentRow(doc.id)).toBeUndefined();
    expect(await chunkRows(doc.id)).toEqual([]);
    expect(await taskRows(doc.id)).toEqual([]);
    expect(await db().select().from(knowledgeBaseDocuments)).toEqual([]);
    expect(await t.deps.storage.head(key)).toBeNull();
    expect((await t.get(`${base}${doc.id}/`, alice)).statusCode).toBe(404);
  });

  it('is for the uploader and admins: readers get 403, others 404', async () => {
    const { owner, admin, alice, bob, carol, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    const shared = await newDocument(t, ws.id, alice, { knowledge_base_ids: [kb.id] });
    const hidden = await newDocument(t, ws.id, alice);
    expect((await t.delete(`${base}${shared.id}/`, bob)).statusCode).toBe(403);
    expect((await t.delete(`${base}${hidden.id}/`, carol)).statusCode).toBe(404);
    expect(await documentRow(shared.id)).toBeDefined();
    expect((await t.delete(`${base}${shared.id}/`, admin)).statusCode).toBe(204);
    expect((await t.delete(`${base}${hidden.id}/`, owner)).statusCode).toBe(204);
  });

  it('revokes a running ingestion: nothing of it lands after the delete', async () => {
    const { alice, ws, base } = await setup();
    const hold = holdNextIngestion();
    const { document } = await uploadFile(t, ws.id, alice, { name: 'notes.txt', contentType: 'text/plain', bytes: fixture('notes.txt') });
    await hold.inside;
    const running = await t.get(`${base}${document.id}/processing-status/`, alice);
    expect(running.json()).toMatchObject({ processing_status: 'processing', task: { status: 'STARTED' } });
    const key = (await documentRow(document.id))!.storageKey;

    expect((await t.delete(`${base}${document.id}/`, alice)).statusCode).toBe(204);
    hold.release();
    await t.deps.jobs.drain();

    expect(await documentRow(document.id)).toBeUndefined();
    expect(await chunkRows(document.id)).toEqual([]);
    expect(await taskRows(document.id)).toEqual([]);
    expect(await t.deps.storage.head(key)).toBeNull();
  });
});

describe('download-url', () => {
  it('returns a signed URL that serves the file as an attachment', async () => {
    const { alice, ws, base } = await setup();
    const bytes = fixture('sample.pdf');
    const { document } = await ingestFile(t, ws.id, alice, { name: 'Q3 report.pdf', contentType: 'application/pdf', bytes });
    const res = await t.get(`${base}${document.id}/download-url/`, alice);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ url: expect.stringMatching(/^http/), expires_at: expect.any(String) });
    expect(new Date(res.json().expires_at).getTime()).toBeGreaterThan(Date.now());

    const url = new URL(res.json().url);
    const file = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-disposition']).toBe('attachment; filename="Q3 report.pdf"');
    expect(file.headers['content-type']).toBe('application/pdf');
    expect(file.rawPayload.equals(bytes)).toBe(true);

    // The signature covers the key: another key with this query is refused.
    const forged = await t.app.inject({ method: 'GET', url: `${url.pathname.replace(/[^/]+$/, 'other.pdf')}${url.search}` });
    expect(forged.statusCode).toBe(403);
  });

  it('answers 409 while nothing is stored yet', async () => {
    const { alice, ws, base } = await setup();
    const doc = await newDocument(t, ws.id, alice);
    const res = await t.get(`${base}${doc.id}/download-url/`, alice);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('file_not_available');
  });
});

describe('processing status and chunks', () => {
  it('has no task before the upload is confirmed', async () => {
    const { alice, ws, base } = await setup();
    const doc = await newDocument(t, ws.id, alice);
    const res = await t.get(`${base}${doc.id}/processing-status/`, alice);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ processing_status: 'pending', task: null });
  });

  it('lists the chunks of a PDF in order with their page numbers', async () => {
    const { alice, ws, base } = await setup();
    const { document, status } = await ingestFile(t, ws.id, alice, {
      name: 'sample.pdf',
      contentType: 'application/pdf',
      bytes: fixture('sample.pdf'),
    });
    expect(status).toEqual({
      processing_status: 'ready',
      task: {
        id: expect.any(String),
        document: document.id,
        task_id: expect.any(String),
        status: 'SUCCESS',
        error_message: null,
        created_at: expect.any(String),
      },
    });
    const res = await t.get(`${base}${document.id}/chunks/`, alice);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ count: 2, next: null, previous: null });
    expect(res.json().results).toEqual([
      { id: expect.any(String), index: 0, content: expect.stringContaining('apples'), token_count: expect.any(Number), page: 1 },
      { id: expect.any(String), index: 1, content: expect.stringContaining('pears'), token_count: expect.any(Number), page: 2 },
    ]);
    const paged = await t.get(`${base}${document.id}/chunks/?limit=1&offset=1`, alice);
    expect(paged.json().results.map((c: { page: number }) => c.page)).toEqual([2]);
  });
});

describe('reprocess', () => {
  it('queues a new task and replaces the chunks instead of adding to them', async () => {
    const { alice, ws, base } = await setup();
    const doc = await readyTextDocument(t, ws.id, alice, fixture('notes.txt').toString('utf8'));
    const before = await chunkRows(doc.id);
    const [firstTask] = await taskRows(doc.id);

    const res = await t.post(`${base}${doc.id}/reprocess/`, {}, alice);
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ processing_status: 'pending', task: { status: 'PENDING', document: doc.id } });
    expect(res.json().task.id).not.toBe(firstTask!.id);
    await t.deps.jobs.drain();

    const status = (await t.get(`${base}${doc.id}/processing-status/`, alice)).json();
    expect(status).toMatchObject({ processing_status: 'ready', task: { id: res.json().task.id, status: 'SUCCESS' } });
    const after = await chunkRows(doc.id);
    expect(after.map((c) => c.content)).toEqual(before.map((c) => c.content));
    expect(after.map((c) => c.id)).not.toEqual(before.map((c) => c.id));
    expect((await taskRows(doc.id)).map((task) => task.status)).toEqual(['SUCCESS', 'SUCCESS']);
  });

  it('revokes the running task; only the new one lands', async () => {
    const { alice, ws, base } = await setup();
    const hold = holdNextIngestion();
    const { document, confirm } = await uploadFile(t, ws.id, alice, { name: 'notes.txt', contentType: 'text/plain', bytes: fixture('notes.txt') });
    await hold.inside;
    const res = await t.post(`${base}${document.id}/reprocess/`, {}, alice);
    expect(res.statusCode).toBe(202);
    hold.release();
    await t.deps.jobs.drain();

    const tasks = await taskRows(document.id);
    expect(tasks.map((task) => [task.id, task.status])).toEqual([
      [confirm.task.id, 'REVOKED'],
      [res.json().task.id, 'SUCCESS'],
    ]);
    expect((await documentRow(document.id))!.processingStatus).toBe('ready');
    const chunks = await chunkRows(document.id);
    expect(chunks.map((c) => c.chunkIndex)).toEqual([...chunks.keys()]);
  });

  it('is for the uploader and admins (403 for readers, 404 for others)', async () => {
    const { admin, alice, bob, carol, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice, { is_shared_with_workspace: true });
    const doc = await readyTextDocument(t, ws.id, alice, 'Some words to index.', 'a.txt', [kb.id]);
    const hidden = await readyTextDocument(t, ws.id, alice, 'Hidden words.', 'b.txt');
    expect((await t.post(`${base}${doc.id}/reprocess/`, {}, bob)).statusCode).toBe(403);
    expect((await t.post(`${base}${hidden.id}/reprocess/`, {}, carol)).statusCode).toBe(404);
    expect(await taskRows(doc.id)).toHaveLength(1);
    expect((await t.post(`${base}${doc.id}/reprocess/`, {}, admin)).statusCode).toBe(202);
    await t.deps.jobs.drain();
  });

  it('needs credit: 402 credit_exhausted when it is used up, and no task is queued', async () => {
    const { alice, ws, base } = await setup();
    const doc = await readyTextDocument(t, ws.id, alice, 'Some words to index.');
    await recordUsage(t, ws.id, 5);
    const res = await t.post(`${base}${doc.id}/reprocess/`, {}, alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('credit_exhausted');
    expect(await taskRows(doc.id)).toHaveLength(1);
    expect((await documentRow(doc.id))!.processingStatus).toBe('ready');
  });

  it('answers 400 upload_missing for an upload that never arrived', async () => {
    const { alice, ws, base } = await setup();
    const doc = await newDocument(t, ws.id, alice);
    const res = await t.post(`${base}${doc.id}/reprocess/`, {}, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('upload_missing');
    expect(await taskRows(doc.id)).toEqual([]);
  });
});

describe('archived workspace', () => {
  it('reads, but refuses uploads, imports, updates, deletes and reprocessing with 409', async () => {
    const { owner, alice, ws, base } = await setup();
    const doc = await readyTextDocument(t, ws.id, alice, 'Archive me.');
    expect((await t.patch(`/api/workspaces/${ws.id}/`, { status: 'archived' }, owner)).statusCode).toBe(200);
    const writes: Array<[string, string, unknown]> = [
      ['POST', `${base}upload/`, { name: 'a.txt', content_type: 'text/plain', size: 5 }],
      ['POST', `${base}from-url/`, { url: 'https://example.com/' }],
      ['PATCH', `${base}${doc.id}/`, { name: 'x' }],
      ['DELETE', `${base}${doc.id}/`, undefined],
      ['POST', `${base}${doc.id}/reprocess/`, {}],
      ['POST', `${base}${doc.id}/confirm-upload/`, {}],
    ];
    for (const [method, url, body] of writes) {
      const res = await t.request(method as 'POST', url, { as: alice, body });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(409);
      expect(res.json().code).toBe('workspace_archived');
    }
    for (const path of ['', `${doc.id}/`, `${doc.id}/chunks/`, `${doc.id}/processing-status/`, `${doc.id}/download-url/`]) {
      expect((await t.get(`${base}${path}`, alice)).statusCode).toBe(200);
    }
    expect(await db().select().from(documents)).toHaveLength(1);
  });
});
