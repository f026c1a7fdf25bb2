import { tmpdir } from 'node:os';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, useTestApp } from '../../../test/support/app.js';
import { recordUsage } from '../../../test/support/billing.js';
import {
  createKb,
  docsBase,
  fixture,
  type LocalSite,
  LIFTED_THROTTLES,
  newDocument,
  putToSignedUrl,
  send,
  startLocalSite,
  startUpload,
  writePlansFile,
} from '../../../test/support/documents.js';
import { addMember, newUser, newWorkspace } from '../../../test/support/factories.js';
import { knowledgeBaseDocuments } from '../knowledge-bases/knowledge-bases.table.js';
import { uploadKeyOf } from './documents.service.js';
import { documents, ingestionTasks } from './documents.table.js';

// Tiny limits on the free plan, so the limits are reached with a few small files.
const LIMITS = { max_documents: 3, max_storage_bytes: 50_000, max_file_size_bytes: 20_000 };
const PLANS_FILE = writePlansFile(tmpdir(), LIMITS);

const t = useTestApp({ ...LIFTED_THROTTLES, PLANS_FILE });

async function setup() {
  const [owner, alice, bob, outsider] = await Promise.all([newUser(t), newUser(t), newUser(t), newUser(t)]);
  const ws = await newWorkspace(t, owner!);
  await addMember(t, ws, alice!);
  await addMember(t, ws, bob!);
  return { owner: owner!, alice: alice!, bob: bob!, outsider: outsider!, ws, base: docsBase(ws.id) };
}

const db = () => t.deps.database.db;
const documentRows = () => db().select().from(documents);
const taskRows = (id: string) => db().select().from(ingestionTasks).where(eq(ingestionTasks.documentId, id));
const uploadBody = (overrides: Record<string, unknown> = {}) => ({ name: 'notes.txt', content_type: 'text/plain', size: 100, ...overrides });

describe('the presigned upload flow', () => {
  it('upload → PUT to the signed URL → confirm → ingestion → ready', async () => {
    const { alice, ws, base } = await setup();
    const kb = await createKb(t, ws.id, alice);
    const bytes = fixture('sample.pdf');
    const started = await t.post(
      `${base}upload/`,
      { name: 'sample.pdf', content_type: 'application/pdf', size: bytes.length, knowledge_base_ids: [kb.id] },
      alice,
    );
    expect(started.statusCode, started.body).toBe(201);
    const { document, upload } = started.json();
    expect(document).toEqual({
      id: expect.any(String),
      workspace: ws.id,
      name: 'sample.pdf',
      content_type: 'application/pdf',
      size: bytes.length,
      source_kind: 'upload',
      source_url: null,
      processing_status: 'pending',
      language: null,
      uploaded_by: alice.id,
      knowledge_base_ids: [kb.id],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(upload).toEqual({
      url: expect.stringContaining('/files/upload/'),
      method: 'PUT',
      headers: expect.any(Object),
      expires_at: expect.any(String),
    });
    const headers = Object.fromEntries(Object.entries(upload.headers as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    expect(headers['content-type']).toBe('application/pdf');
    expect(new Date(upload.expires_at).getTime()).toBeGreaterThan(Date.now());
    expect((await t.get(`${base}${document.id}/processing-status/`, alice)).json()).toEqual({ processing_status: 'pending', task: null });

    expect((await putToSignedUrl(t, upload, bytes)).statusCode).toBe(200);
    const confirmed = await t.post(`${base}${document.id}/confirm-upload/`, {}, alice);
    expect(confirmed.statusCode, confirmed.body).toBe(202);
    expect(confirmed.json()).toEqual({
      processing_status: 'pending',
      task: {
        id: expect.any(String),
        document: document.id,
        task_id: expect.any(String),
        status: 'PENDING',
        error_message: null,
        created_at: expect.any(String),
      },
    });

    await t.deps.jobs.drain();
    const status = await t.get(`${base}${document.id}/processing-status/`, alice);
    expect(status.json()).toMatchObject({ processing_status: 'ready', task: { id: confirmed.json().task.id, status: 'SUCCESS' } });
    const [row] = await documentRows();
    expect(row).toMatchObject({ size: bytes.length, contentType: 'application/pdf', processingStatus: 'ready', storedAt: expect.any(Date) });
    const chunks = await t.get(`${base}${document.id}/chunks/`, alice);
    expect(chunks.json().results.map((c: { page: number }) => c.page)).toEqual([1, 2]);

    // Confirming again changes nothing: same task, no new ingestion.
    const again = await t.post(`${base}${document.id}/confirm-upload/`, {}, alice);
    expect(again.statusCode).toBe(202);
    expect(again.json()).toMatchObject({ processing_status: 'ready', task: { id: confirmed.json().task.id } });
    expect(await taskRows(document.id)).toHaveLength(1);
  });

  it('accepts any file name (spaces, accents) and serves it back under that name', async () => {
    const { alice, ws, base } = await setup();
    const bytes = Buffer.from('Résumé of the meeting.');
    const { document, upload } = await startUpload(t, ws.id, alice, {
      name: 'Résumé (final) v2.txt',
      content_type: 'text/plain',
      size: bytes.length,
    });
    expect((await putToSignedUrl(t, upload, bytes)).statusCode).toBe(200);
    expect((await t.post(`${base}${document.id}/confirm-upload/`, {}, alice)).statusCode).toBe(202);
    await t.deps.jobs.drain();
    const url = new URL((await t.get(`${base}${document.id}/download-url/`, alice)).json().url);
    const file = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-disposition']).toContain(`filename*=UTF-8''R%C3%A9sum%C3%A9%20%28final%29%20v2.txt`);
    expect(file.rawPayload.equals(bytes)).toBe(true);
  });

  it('answers 400 upload_missing when confirming before the file was PUT', async () => {
    const { alice, ws, base } = await setup();
    const { document } = await startUpload(t, ws.id, alice, uploadBody());
    const res = await t.post(`${base}${document.id}/confirm-upload/`, {}, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'upload_missing', detail: expect.any(String) });
    expect(await taskRows(document.id)).toEqual([]);
    expect((await documentRows())[0]).toMatchObject({ processingStatus: 'pending', storedAt: null });
  });

  // A client that ignores the declared size (S3 does not enforce it on a presigned PUT) gets
  // 400 upload_size_mismatch before any plan check: the declared size is what the plan limits
  // (file size and storage) were checked against at upload/, and what storage counts.
  it.each([
    ['larger than the plan allows', LIMITS.max_file_size_bytes + 1],
    ['larger than declared, overflowing the storage', 15_000],
    ['smaller than declared', 10],
  ])('refuses (400 upload_size_mismatch) and discards an upload %s', async (_label, actual) => {
    const { alice, base } = await setup();
    for (let i = 0; i < 2; i++) expect((await t.post(`${base}upload/`, uploadBody({ size: 19_000 }), alice)).statusCode).toBe(201);
    const { document } = (await t.post(`${base}upload/`, uploadBody({ size: 100 }), alice)).json();
    const row = (await documentRows()).find((d) => d.id === document.id)!;
    await t.deps.storage.put(uploadKeyOf(row), Buffer.alloc(actual, 'a'), { contentType: 'text/plain', contentLength: actual });
    const res = await t.post(`${base}${document.id}/confirm-upload/`, {}, alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'upload_size_mismatch', errors: { size: [expect.any(String)] } });
    expect(await t.deps.storage.head(uploadKeyOf(row))).toBeNull();
    expect(await t.deps.storage.head(row.storageKey)).toBeNull();
    expect(await taskRows(document.id)).toEqual([]);
    expect((await documentRows()).find((d) => d.id === document.id)).toMatchObject({ size: 100, storedAt: null });
  });

  it('refuses a PUT larger than the declared size (413)', async () => {
    const { alice, ws } = await setup();
    const { upload } = await startUpload(t, ws.id, alice, uploadBody({ size: 10 }));
    const res = await putToSignedUrl(t, upload, Buffer.alloc(11, 'a'));
    expect(res.statusCode).toBe(413);
  });

  it('only lets the uploader (or an admin) confirm', async () => {
    const { owner, alice, bob, ws, base } = await setup();
    const { document, upload } = await startUpload(t, ws.id, alice, uploadBody({ size: 5 }));
    await putToSignedUrl(t, upload, Buffer.from('hello'));
    expect((await t.post(`${base}${document.id}/confirm-upload/`, {}, bob)).statusCode).toBe(404);
    expect((await t.post(`${base}${document.id}/confirm-upload/`, {}, owner)).statusCode).toBe(202);
    await t.deps.jobs.drain();
  });
});

describe('plan limits at upload', () => {
  it('refuses a declared size over max_file_size_bytes with 402 file_too_large and creates nothing', async () => {
    const { alice, base } = await setup();
    const res = await t.post(`${base}upload/`, uploadBody({ size: LIMITS.max_file_size_bytes + 1 }), alice);
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ code: 'file_too_large', detail: expect.any(String) });
    expect(await documentRows()).toEqual([]);
  });

  it('refuses a document over max_documents with 402 document_limit (uploads and imports)', async () => {
    const { alice, bob, ws, base } = await setup();
    for (let i = 0; i < LIMITS.max_documents; i++) await newDocument(t, ws.id, i % 2 ? alice : bob);
    const upload = await t.post(`${base}upload/`, uploadBody(), alice);
    expect(upload.statusCode).toBe(402);
    expect(upload.json().code).toBe('document_limit');
    const imported = await t.post(`${base}from-url/`, { url: 'https://example.com/article' }, alice);
    expect(imported.statusCode).toBe(402);
    expect(imported.json().code).toBe('document_limit');
    expect(await documentRows()).toHaveLength(LIMITS.max_documents);
  });

  it('refuses bytes over max_storage_bytes with 402 storage_limit', async () => {
    const { alice, base } = await setup();
    const size = 19_000;
    expect((await t.post(`${base}upload/`, uploadBody({ size }), alice)).statusCode).toBe(201);
    expect((await t.post(`${base}upload/`, uploadBody({ size }), alice)).statusCode).toBe(201);
    const res = await t.post(`${base}upload/`, uploadBody({ size }), alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('storage_limit');
    expect(await documentRows()).toHaveLength(2);
    // What still fits is accepted.
    expect((await t.post(`${base}upload/`, uploadBody({ size: 50_000 - 2 * size }), alice)).statusCode).toBe(201);
  });

  it('lets exactly one of several concurrent uploads take the last document slot', async () => {
    const { alice, bob, ws, base } = await setup();
    for (let i = 0; i < LIMITS.max_documents - 1; i++) await newDocument(t, ws.id, alice);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.post(`${base}upload/`, uploadBody({ name: `race-${i}.txt` }), i % 2 ? alice : bob)),
    );
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([201, 402, 402, 402, 402, 402]);
    for (const res of results.filter((r) => r.statusCode === 402)) expect(res.json().code).toBe('document_limit');
    expect(await documentRows()).toHaveLength(LIMITS.max_documents);
  });
});

describe('bad upload requests', () => {
  it.each([
    ['no name', { name: undefined }, 'name'],
    ['a blank name', { name: '  ' }, 'name'],
    ['a size of 0', { size: 0 }, 'size'],
    ['a negative size', { size: -5 }, 'size'],
    ['a fractional size', { size: 1.5 }, 'size'],
    ['a size as text', { size: 'big' }, 'size'],
    ['a content type that is no MIME type', { content_type: 'pdf' }, 'content_type'],
    ['knowledge_base_ids that are not UUIDs', { knowledge_base_ids: ['kb'] }, 'knowledge_base_ids.0'],
  ])('refuses %s with 400 and creates nothing', async (_label, overrides, field) => {
    const { alice, base } = await setup();
    const res = await t.post(`${base}upload/`, uploadBody(overrides), alice);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'validation_error', errors: { [field]: expect.any(Array) } });
    expect(await documentRows()).toEqual([]);
  });

  it('refuses knowledge bases the uploader may not write to with 400 and creates nothing', async () => {
    const { owner, alice, ws, base } = await setup();
    const readOnly = await createKb(t, ws.id, owner, { is_shared_with_workspace: true });
    const hidden = await createKb(t, ws.id, owner);
    for (const kb of [readOnly, hidden]) {
      const res = await t.post(`${base}upload/`, uploadBody({ knowledge_base_ids: [kb.id] }), alice);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_knowledge_bases', errors: { knowledge_base_ids: expect.any(Array) } });
    }
    expect(await documentRows()).toEqual([]);
    expect(await db().select().from(knowledgeBaseDocuments)).toEqual([]);
  });

  it('answers 403 to non-members and anonymous callers', async () => {
    const { outsider, base } = await setup();
    expect((await t.post(`${base}upload/`, uploadBody(), outsider)).statusCode).toBe(403);
    expect((await t.post(`${base}upload/`, uploadBody(), null)).statusCode).toBe(403);
    expect(await documentRows()).toEqual([]);
  });
});

describe('credit', () => {
  it('refuses imports with 402 credit_exhausted when the credit is used up, creating nothing', async () => {
    const { alice, ws, base } = await setup();
    await recordUsage(t, ws.id, 5);
    const res = await t.post(`${base}from-url/`, { url: 'https://example.com/article' }, alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('credit_exhausted');
    expect(await documentRows()).toEqual([]);
  });

  it('refuses to confirm an upload (which starts ingestion) when the credit is used up', async () => {
    const { alice, ws, base } = await setup();
    const { document, upload } = await startUpload(t, ws.id, alice, uploadBody({ size: 5 }));
    await putToSignedUrl(t, upload, Buffer.from('hello'));
    await recordUsage(t, ws.id, 5);
    const res = await t.post(`${base}${document.id}/confirm-upload/`, {}, alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('credit_exhausted');
    expect(await taskRows(document.id)).toEqual([]);
  });
});

describe('THROTTLE_DOCUMENT_UPLOADS', () => {
  let app: TestApp;
  let site: LocalSite;
  beforeAll(async () => {
    site = await startLocalSite();
    site.routes.set('/page', send(200, '<html><body><p>A page about throttles.</p></body></html>'));
    app = await createTestApp({ THROTTLE_DOCUMENT_UPLOADS: '2/hour', URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await app?.close();
    await site?.close();
  });

  it('is shared by upload/ and from-url/: the third of either kind gets 429 with Retry-After', async () => {
    const [alice, bob] = await Promise.all([newUser(app), newUser(app)]);
    const ws = await newWorkspace(app, alice!);
    await addMember(app, ws, bob!);
    const base = docsBase(ws.id);
    expect((await app.post(`${base}upload/`, uploadBody(), alice)).statusCode).toBe(201);
    expect((await app.post(`${base}from-url/`, { url: `${site.url}/page` }, alice)).statusCode).toBe(202);
    for (const [path, body] of [
      ['upload/', uploadBody()],
      ['from-url/', { url: `${site.url}/page` }],
    ] as const) {
      const res = await app.post(`${base}${path}`, body, alice);
      expect(res.statusCode, res.body).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.json().code).toBeTruthy();
    }
    // Counted per user.
    expect((await app.post(`${base}upload/`, uploadBody(), bob)).statusCode).toBe(201);
    await app.deps.jobs.drain();
    expect(await app.deps.database.db.select().from(documents)).toHaveLength(3);
  });
});
