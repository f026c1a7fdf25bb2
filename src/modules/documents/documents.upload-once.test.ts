import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/support/app.js';
import { docsBase, LIFTED_THROTTLES, putToSignedUrl, startUpload, type UploadGrant } from '../../../test/support/documents.js';
import { addMember, newUser, newWorkspace, type TestUser } from '../../../test/support/factories.js';
import { truncateAll } from '../../../test/support/db.js';
import { s3StorageEnv, startTestS3, type TestS3 } from '../../../test/support/s3.js';
import { uploadKeyOf } from './documents.service.js';
import { documents, ingestionTasks } from './documents.table.js';

/*
 * Upload URLs write once, and what `confirm-upload/` accepted can never change afterwards: not
 * the file served by `download-url/`, not the chunks search uses. Shown on both storage backends.
 */

const ORIGINAL = Buffer.from('The original minutes: the budget was approved unanimously.');
// Same length, other words: only the bytes differ.
const REPLACEMENT = Buffer.from('A forged version: the budget was rejected by everyone.'.padEnd(ORIGINAL.length, '!'));
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64');

interface Backend {
  t: TestApp;
  /** PUTs to a signed URL as a client would (the local URLs through the app, S3 ones over HTTP). */
  put(upload: UploadGrant, bytes: Buffer, headers?: Record<string, string>): Promise<{ status: number; body: string }>;
  /** Fetches a download URL's bytes. */
  download(url: string): Promise<Buffer>;
  close(): Promise<void>;
}

async function localBackend(env: Record<string, string> = {}): Promise<Backend> {
  const t = await createTestApp({ ...LIFTED_THROTTLES, ...env });
  return {
    t,
    async put(upload, bytes, headers) {
      const res = await putToSignedUrl(t, headers ? { ...upload, headers } : upload, bytes);
      return { status: res.statusCode, body: res.body };
    },
    async download(url) {
      const parsed = new URL(url);
      return (await t.app.inject({ method: 'GET', url: `${parsed.pathname}${parsed.search}` })).rawPayload;
    },
    close: () => t.close(),
  };
}

async function s3Backend(): Promise<Backend> {
  const s3: TestS3 = await startTestS3();
  const t = await createTestApp({
    ...LIFTED_THROTTLES,
    ...s3StorageEnv(s3),
  });
  return {
    t,
    async put(upload, bytes, headers) {
      const res = await fetch(upload.url, { method: 'PUT', headers: headers ?? upload.headers, body: bytes });
      return { status: res.status, body: await res.text() };
    },
    async download(url) {
      return Buffer.from(await (await fetch(url)).arrayBuffer());
    },
    async close() {
      await t.close();
      await s3.close();
    },
  };
}

describe.each([
  { kind: 'local', make: () => localBackend() },
  { kind: 's3', make: s3Backend },
])('single-use uploads on $kind storage', ({ kind, make }) => {
  let b: Backend;
  beforeAll(async () => {
    b = await make();
  });
  afterAll(async () => {
    await b?.close();
  });

  async function setup() {
    await truncateAll(b.t.database);
    const alice = await newUser(b.t);
    const ws = await newWorkspace(b.t, alice);
    return { alice, ws, base: docsBase(ws.id) };
  }

  const confirm = (base: string, id: string, as: TestUser) => b.t.post(`${base}${id}/confirm-upload/`, {}, as);
  const chunkText = async (base: string, id: string, as: TestUser) =>
    (await b.t.get(`${base}${id}/chunks/`, as)).json().results.map((c: { content: string }) => c.content).join(' ');
  const served = async (base: string, id: string, as: TestUser) =>
    b.download((await b.t.get(`${base}${id}/download-url/`, as)).json().url);

  it('a PUT to the upload URL after confirm cannot change the file served or the chunks searched', async () => {
    const { alice, ws, base } = await setup();
    const { document, upload } = await startUpload(b.t, ws.id, alice, { name: 'minutes.txt', content_type: 'text/plain', size: ORIGINAL.length });
    expect((await b.put(upload, ORIGINAL)).status).toBe(200);
    expect((await confirm(base, document.id, alice)).statusCode).toBe(202);
    await b.t.deps.jobs.drain();
    expect(await chunkText(base, document.id, alice)).toContain('approved unanimously');

    const again = await b.put(upload, REPLACEMENT);
    if (kind === 'local') {
      expect(again.status).toBe(409);
      expect(JSON.parse(again.body)).toEqual({ detail: expect.any(String), code: 'upload_already_used' });
    } else {
      // S3 itself answers 412 (the URL signs If-None-Match: *); the test fake, s3rver, ignores the
      // condition, so the PUT lands, on the upload key: the confirmed file lives under another.
      expect([200, 412]).toContain(again.status);
    }
    expect((await confirm(base, document.id, alice)).statusCode).toBe(202);
    await b.t.deps.jobs.drain();
    expect((await served(base, document.id, alice)).equals(ORIGINAL)).toBe(true);
    const [row] = await b.t.deps.database.db.select().from(documents).where(eq(documents.id, document.id));
    expect((await b.t.deps.storage.head(row!.storageKey))?.size).toBe(ORIGINAL.length);
    expect(await chunkText(base, document.id, alice)).toContain('approved unanimously');
    expect(await chunkText(base, document.id, alice)).not.toContain('forged');
    // A reprocess reads the confirmed file too.
    expect((await b.t.post(`${base}${document.id}/reprocess/`, {}, alice)).statusCode).toBe(202);
    await b.t.deps.jobs.drain();
    expect(await chunkText(base, document.id, alice)).not.toContain('forged');
    expect((await served(base, document.id, alice)).equals(ORIGINAL)).toBe(true);
  });

  it('signs the single-use condition into the URL', async () => {
    const { alice, ws } = await setup();
    const { upload } = await startUpload(b.t, ws.id, alice, { name: 'a.txt', content_type: 'text/plain', size: ORIGINAL.length });
    if (kind === 's3') {
      expect(upload.headers).toEqual({ 'Content-Type': 'text/plain', 'If-None-Match': '*' });
      // A client that drops the condition breaks the signature.
      const res = await b.put(upload, ORIGINAL, { 'Content-Type': 'text/plain' });
      expect(res.status).toBe(403);
      expect(res.body).toContain('SignatureDoesNotMatch');
    } else {
      // The local URL needs no header: the app refuses any PUT over an existing object.
      expect(upload.headers).toEqual({ 'Content-Type': 'text/plain' });
    }
  });

  it('discards an upload that confirm refuses, so the same URL can deliver the right file', async () => {
    const { alice, ws, base } = await setup();
    const { document, upload } = await startUpload(b.t, ws.id, alice, {
      name: 'minutes.txt',
      content_type: 'text/plain',
      size: ORIGINAL.length,
      checksum_sha256: sha256(ORIGINAL),
    });
    // The wrong bytes (same size): the checksum catches them.
    expect((await b.put(upload, REPLACEMENT)).status).toBe(200);
    const refused = await confirm(base, document.id, alice);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'checksum_mismatch', errors: { checksum_sha256: [expect.any(String)] } });
    const [row] = await b.t.deps.database.db.select().from(documents).where(eq(documents.id, document.id));
    expect(row).toMatchObject({ storedAt: null, processingStatus: 'pending', size: ORIGINAL.length });
    expect(await b.t.deps.storage.head(row!.storageKey)).toBeNull();
    expect(await b.t.deps.storage.head(uploadKeyOf(row!))).toBeNull();

    // Too short: the declared size catches it.
    expect((await b.put(upload, ORIGINAL.subarray(0, 10))).status).toBe(200);
    const short = await confirm(base, document.id, alice);
    expect(short.statusCode).toBe(400);
    expect(short.json().code).toBe('upload_size_mismatch');

    expect((await b.put(upload, ORIGINAL)).status).toBe(200);
    expect((await confirm(base, document.id, alice)).statusCode).toBe(202);
    await b.t.deps.jobs.drain();
    expect((await served(base, document.id, alice)).equals(ORIGINAL)).toBe(true);
  });

  it('moves the file once when confirms race', async () => {
    const { alice, ws, base } = await setup();
    const { document, upload } = await startUpload(b.t, ws.id, alice, { name: 'a.txt', content_type: 'text/plain', size: ORIGINAL.length });
    expect((await b.put(upload, ORIGINAL)).status).toBe(200);
    const answers = await Promise.all([confirm(base, document.id, alice), confirm(base, document.id, alice), confirm(base, document.id, alice)]);
    expect(answers.map((r) => r.statusCode)).toEqual([202, 202, 202]);
    await b.t.deps.jobs.drain();
    const tasks = await b.t.deps.database.db.select().from(ingestionTasks).where(eq(ingestionTasks.documentId, document.id));
    expect(tasks).toHaveLength(1);
    expect((await served(base, document.id, alice)).equals(ORIGINAL)).toBe(true);
  });
});

describe('checksum_sha256 on upload/', () => {
  let b: Backend;
  beforeAll(async () => {
    b = await localBackend();
  });
  afterAll(async () => {
    await b?.close();
  });

  it.each([['not base64', 'not-a-checksum'], ['a hex digest', createHash('sha256').update('x').digest('hex')], ['too short', 'AAAA']])(
    'refuses %s with 400',
    async (_label, checksum) => {
      const alice = await newUser(b.t);
      const ws = await newWorkspace(b.t, alice);
      const res = await b.t.post(`${docsBase(ws.id)}upload/`, { name: 'a.txt', content_type: 'text/plain', size: 5, checksum_sha256: checksum }, alice);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_error', errors: { checksum_sha256: expect.any(Array) } });
    },
  );
});

describe('reprocess/ and THROTTLE_DOCUMENT_UPLOADS', () => {
  let b: Backend;
  beforeAll(async () => {
    b = await localBackend({ THROTTLE_DOCUMENT_UPLOADS: '3/hour' });
  });
  afterAll(async () => {
    await b?.close();
  });

  it('shares the throttle of uploads and imports: over it, 429 with Retry-After and nothing queued', async () => {
    const [alice, bob] = [await newUser(b.t), await newUser(b.t)];
    const ws = await newWorkspace(b.t, alice);
    await addMember(b.t, ws, bob);
    const base = docsBase(ws.id);
    // 1: the upload.
    const { document, upload } = await startUpload(b.t, ws.id, alice, { name: 'a.txt', content_type: 'text/plain', size: ORIGINAL.length });
    expect((await b.put(upload, ORIGINAL)).status).toBe(200);
    expect((await b.t.post(`${base}${document.id}/confirm-upload/`, {}, alice)).statusCode).toBe(202);
    await b.t.deps.jobs.drain();
    // 2 and 3: two reprocesses.
    for (let i = 0; i < 2; i++) {
      expect((await b.t.post(`${base}${document.id}/reprocess/`, {}, alice)).statusCode).toBe(202);
      await b.t.deps.jobs.drain();
    }
    const tasksBefore = await b.t.deps.database.db.select().from(ingestionTasks);
    const res = await b.t.post(`${base}${document.id}/reprocess/`, {}, alice);
    expect(res.statusCode).toBe(429);
    expect(res.json().code).toBe('throttled');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(await b.t.deps.database.db.select().from(ingestionTasks)).toHaveLength(tasksBefore.length);
    // The same scope as uploads: alice cannot upload either; another user still can.
    expect((await b.t.post(`${base}upload/`, { name: 'b.txt', content_type: 'text/plain', size: 5 }, alice)).statusCode).toBe(429);
    expect((await b.t.post(`${base}upload/`, { name: 'b.txt', content_type: 'text/plain', size: 5 }, bob)).statusCode).toBe(201);
  });
});
