import type { AddressInfo } from 'node:net';
import contentDisposition from 'content-disposition';
import { Readable } from 'node:stream';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/support/app.js';
import { startTestS3, type TestS3 } from '../../../test/support/s3.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { ObjectStorage } from './port.js';
import { createS3Storage } from './s3.js';

/**
 * One contract for both adapters, always over real HTTP: the local adapter's signed URLs are
 * served by the real app (listening on a random port), the S3 adapter's by s3rver, an
 * S3-compatible server that checks SigV4 signatures and expiry.
 */

interface Harness {
  storage: ObjectStorage;
  /** Turns a signed URL into one this test can reach (the app's public base URL is fictional). */
  reachable(url: string): string;
  close(): Promise<void>;
  /** The directory behind the local adapter. */
  dataDir?: string;
}

async function localHarness(): Promise<Harness> {
  const t: TestApp = await createTestApp({ STORAGE_BACKEND: 'local', STORAGE_MAX_UPLOAD_BYTES: '1048576' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  return {
    storage: t.deps.storage,
    reachable: (url) => url.replace(t.config.publicBaseUrl, `http://127.0.0.1:${port}`),
    close: () => t.close(),
    dataDir: t.config.DATA_DIR,
  };
}

async function s3Harness(): Promise<Harness> {
  const s3: TestS3 = await startTestS3();
  const storage = createS3Storage({ ...s3, forcePathStyle: true });
  return {
    storage,
    reachable: (url) => url,
    close: async () => {
      await storage.close();
      await s3.close();
    },
  };
}

const adapters = [
  { kind: 'local', harness: localHarness },
  { kind: 's3', harness: s3Harness },
] as const;

const text = async (stream: Readable) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(adapters)('object storage contract: $kind', ({ kind, harness }) => {
  let h: Harness;
  let storage: ObjectStorage;
  beforeAll(async () => {
    h = await harness();
    storage = h.storage;
  });
  afterAll(async () => {
    await h?.close();
  });

  const upload = async (url: string, body: string | Buffer, headers: Record<string, string>) =>
    fetch(h.reachable(url), { method: 'PUT', body, headers });

  it('puts, heads, gets and deletes objects, from buffers and streams', async () => {
    expect(storage.kind).toBe(kind);
    await storage.put('ws/1/docs/a.txt', Buffer.from('hello world'), { contentType: 'text/plain' });
    expect(await storage.head('ws/1/docs/a.txt')).toEqual({ size: 11, contentType: 'text/plain' });
    expect(await text(await storage.get('ws/1/docs/a.txt'))).toBe('hello world');

    await storage.put('ws/1/docs/b.json', Readable.from([Buffer.from('{"a":'), Buffer.from('1}')]), {
      contentType: 'application/json',
    });
    expect(await storage.head('ws/1/docs/b.json')).toEqual({ size: 7, contentType: 'application/json' });

    // Overwriting replaces bytes and type.
    await storage.put('ws/1/docs/a.txt', Buffer.from('<p>hi</p>'), { contentType: 'text/html' });
    expect(await storage.head('ws/1/docs/a.txt')).toEqual({ size: 9, contentType: 'text/html' });

    await storage.delete('ws/1/docs/a.txt');
    expect(await storage.head('ws/1/docs/a.txt')).toBeNull();
    await expect(storage.get('ws/1/docs/a.txt')).rejects.toBeInstanceOf(NotFoundError);
    await expect(storage.delete('ws/1/docs/a.txt')).resolves.toBeUndefined();
    await expect(storage.ping()).resolves.toBeUndefined();
  });

  it.each(['', '../secret', '/etc/passwd', 'a//b', 'a/./b', 'a/../b', 'a/', '.hidden', 'a\\b', 'a b', 'a\0b', `${'x'.repeat(513)}`])(
    'refuses the key %j on every operation',
    async (key) => {
      await expect(storage.put(key, Buffer.from('x'), { contentType: 'text/plain' })).rejects.toBeInstanceOf(ValidationError);
      await expect(storage.get(key)).rejects.toBeInstanceOf(ValidationError);
      await expect(storage.head(key)).rejects.toBeInstanceOf(ValidationError);
      await expect(storage.delete(key)).rejects.toBeInstanceOf(ValidationError);
      await expect(storage.createUploadUrl(key, { contentType: 'text/plain', expiresInSeconds: 60 })).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(storage.createDownloadUrl(key, { filename: 'x', expiresInSeconds: 60 })).rejects.toBeInstanceOf(
        ValidationError,
      );
    },
  );

  it('writes an upload URL once (local: 409; S3: If-None-Match), and commitUpload moves the object out of its reach', async () => {
    const key = 'ws/3/uploads/once';
    const final = 'ws/3/documents/once/file.txt';
    const signed = await storage.createUploadUrl(key, { contentType: 'text/plain', expiresInSeconds: 300, maxBytes: 100 });
    expect((await upload(signed.url, 'first', signed.headers)).status).toBe(200);
    const second = await upload(signed.url, 'other', signed.headers);
    // s3rver ignores If-None-Match on PUT (S3, R2 and recent MinIO answer 412): the PUT lands.
    expect(second.status).toBe(kind === 'local' ? 409 : 200);
    const expected = kind === 'local' ? 'first' : 'other';
    await storage.commitUpload(key, final);
    expect(await text(await storage.get(final))).toBe(expected);
    expect(await storage.head(final)).toMatchObject({ size: 5 });
    // The placeholder left behind keeps the URL refused where the store honours the condition.
    expect(await storage.head(key)).toMatchObject({ size: 0 });
    const late = await upload(signed.url, 'late!', signed.headers);
    expect(late.status).toBe(kind === 'local' ? 409 : 200);
    expect(await text(await storage.get(final))).toBe(expected);
    await expect(storage.commitUpload('ws/3/uploads/missing', 'ws/3/documents/missing')).rejects.toBeInstanceOf(NotFoundError);
    await storage.delete(final);
    await storage.delete(key);
  });

  it('uploads through a signed PUT URL and downloads as a named attachment through a signed GET URL', async () => {
    const key = 'ws/2/documents/report';
    const before = Date.now();
    const signed = await storage.createUploadUrl(key, { contentType: 'application/pdf', expiresInSeconds: 300, maxBytes: 1000 });
    expect(signed.method).toBe('PUT');
    // S3 URLs carry the single-use condition as a signed header; local ones enforce it themselves.
    expect(signed.headers).toEqual(kind === 's3' ? { 'Content-Type': 'application/pdf', 'If-None-Match': '*' } : { 'Content-Type': 'application/pdf' });
    expect(signed.url).toMatch(/^https?:\/\//);
    expect(signed.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 299_000);
    expect(signed.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 300_000);

    const put = await upload(signed.url, '%PDF-1.7 fake', signed.headers);
    expect(put.status).toBe(200);
    expect(await storage.head(key)).toEqual({ size: 13, contentType: 'application/pdf' });

    const filename = 'Rapport annuel – été 2024 "final".pdf';
    const download = await storage.createDownloadUrl(key, { filename, expiresInSeconds: 300 });
    const res = await fetch(h.reachable(download.url));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('%PDF-1.7 fake');
    expect(res.headers.get('content-type')).toBe('application/pdf');
    const disposition = res.headers.get('content-disposition') ?? '';
    expect(disposition).toMatch(/^attachment; filename="Rapport annuel _ ete 2024 \\"final\\"\.pdf"; /);
    expect(disposition).toContain("filename*=UTF-8''Rapport%20annuel%20%E2%80%93%20%C3%A9t%C3%A9%202024%20%22final%22.pdf");
    expect(contentDisposition.parse(disposition)).toEqual({ type: 'attachment', parameters: { filename } });
  });

  it('serves the download with the signed content type when one is given', async () => {
    await storage.put('ws/3/x.bin', Buffer.from('abc'), { contentType: 'application/octet-stream' });
    const download = await storage.createDownloadUrl('ws/3/x.bin', {
      filename: 'notes.txt',
      contentType: 'text/plain',
      expiresInSeconds: 60,
    });
    const res = await fetch(h.reachable(download.url));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="notes.txt"');
  });

  it('refuses an upload with another Content-Type than the signed one', async () => {
    const signed = await storage.createUploadUrl('ws/4/typed', { contentType: 'image/png', expiresInSeconds: 60 });
    const res = await upload(signed.url, 'not a png', { 'Content-Type': 'text/html' });
    expect(res.status).toBe(403);
    expect(await storage.head('ws/4/typed')).toBeNull();
  });

  it('refuses tampered URLs: another key, another limit or filename, a forged signature', async () => {
    await storage.put('ws/5/secret', Buffer.from('top secret'), { contentType: 'text/plain' });
    await storage.put('ws/5/public', Buffer.from('public'), { contentType: 'text/plain' });
    const download = await storage.createDownloadUrl('ws/5/public', { filename: 'public.txt', expiresInSeconds: 60 });
    const url = new URL(download.url);

    const otherKey = new URL(url);
    otherKey.pathname = otherKey.pathname.replace('ws/5/public', 'ws/5/secret');
    const forged = new URL(url);
    for (const name of ['sig', 'X-Amz-Signature']) {
      const value = forged.searchParams.get(name);
      if (value) forged.searchParams.set(name, `${value.slice(0, -2)}${value.endsWith('A') ? 'BB' : 'AA'}`);
    }
    const renamed = new URL(url);
    for (const name of ['fn', 'response-content-disposition']) {
      if (renamed.searchParams.has(name)) renamed.searchParams.set(name, 'attachment; filename="evil.html"');
    }
    for (const candidate of [otherKey, forged, renamed]) {
      const res = await fetch(h.reachable(candidate.toString()));
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain('top secret');
    }

    const signed = await storage.createUploadUrl('ws/5/upload', { contentType: 'text/plain', expiresInSeconds: 60 });
    const movedUpload = signed.url.replace('ws/5/upload', 'ws/5/secret');
    expect((await upload(movedUpload, 'overwritten', signed.headers)).status).toBe(403);
    expect(await text(await storage.get('ws/5/secret'))).toBe('top secret');
  });

  it('refuses expired URLs', async () => {
    await storage.put('ws/6/old', Buffer.from('old'), { contentType: 'text/plain' });
    const download = await storage.createDownloadUrl('ws/6/old', { filename: 'old.txt', expiresInSeconds: 1 });
    const signed = await storage.createUploadUrl('ws/6/new', { contentType: 'text/plain', expiresInSeconds: 1 });
    // Expiry has one-second resolution on both adapters.
    await sleep(2100);
    expect((await fetch(h.reachable(download.url))).status).toBe(403);
    expect((await upload(signed.url, 'late', signed.headers)).status).toBe(403);
    expect(await storage.head('ws/6/new')).toBeNull();
  });
});

describe('local storage HTTP specifics', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await localHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as unknown });

  it('answers refusals with the project error shape and codes', async () => {
    const signed = await h.storage.createUploadUrl('ws/7/a', { contentType: 'text/plain', expiresInSeconds: 60 });
    const wrongType = await fetch(h.reachable(signed.url), { method: 'PUT', body: 'x', headers: { 'Content-Type': 'text/html' } });
    expect(await json(wrongType)).toEqual({ status: 403, body: { detail: expect.any(String), code: 'content_type_mismatch' } });

    const forged = h.reachable(signed.url).replace(/sig=[^&]+/, 'sig=AAAA');
    const bad = await fetch(forged, { method: 'PUT', body: 'x', headers: signed.headers });
    expect(await json(bad)).toEqual({ status: 403, body: { detail: expect.any(String), code: 'invalid_signature' } });

    const unsigned = await fetch(h.reachable(signed.url).split('?')[0]!, { method: 'PUT', body: 'x', headers: signed.headers });
    expect(await json(unsigned)).toEqual({ status: 403, body: { detail: expect.any(String), code: 'invalid_signature' } });

    const expired = await h.storage.createDownloadUrl('ws/7/a', { filename: 'a', expiresInSeconds: 1 });
    await sleep(2100);
    expect(await json(await fetch(h.reachable(expired.url)))).toEqual({
      status: 403,
      body: { detail: expect.any(String), code: 'url_expired' },
    });
  });

  it('refuses a body over maxBytes with 413 and keeps nothing, whether or not its length is declared', async () => {
    const signed = await h.storage.createUploadUrl('ws/8/big', { contentType: 'text/plain', expiresInSeconds: 60, maxBytes: 10 });
    const declared = await fetch(h.reachable(signed.url), { method: 'PUT', body: 'x'.repeat(11), headers: signed.headers });
    expect(await json(declared)).toEqual({ status: 413, body: { detail: expect.any(String), code: 'payload_too_large' } });

    // Chunked: no Content-Length, so the limit is enforced while streaming to disk.
    const chunks = [Buffer.alloc(6, 'a'), Buffer.alloc(6, 'b')];
    const streamed = await fetch(h.reachable(signed.url), {
      method: 'PUT',
      body: Readable.toWeb(Readable.from(chunks)) as ReadableStream,
      headers: signed.headers,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await h.storage.head('ws/8/big')).toBeNull();

    // Exactly the limit is fine; nothing is left behind in the temporary folder.
    expect((await fetch(h.reachable(signed.url), { method: 'PUT', body: 'y'.repeat(10), headers: signed.headers })).status).toBe(200);
    expect(await h.storage.head('ws/8/big')).toEqual({ size: 10, contentType: 'text/plain' });
    expect(readdirSync(path.join(h.dataDir!, 'files', '.tmp'))).toEqual([]);
  });

  it('caps uploads at STORAGE_MAX_UPLOAD_BYTES when the URL names no smaller limit', async () => {
    const signed = await h.storage.createUploadUrl('ws/9/cap', { contentType: 'text/plain', expiresInSeconds: 60, maxBytes: 10 ** 12 });
    expect(new URL(signed.url).searchParams.get('max')).toBe('1048576');
  });

  it('accepts an empty upload', async () => {
    const signed = await h.storage.createUploadUrl('ws/10/empty', { contentType: 'text/plain', expiresInSeconds: 60 });
    expect((await fetch(h.reachable(signed.url), { method: 'PUT', body: '', headers: signed.headers })).status).toBe(200);
    expect(await h.storage.head('ws/10/empty')).toEqual({ size: 0, contentType: 'text/plain' });
  });

  it('never serves files outside its directory, whatever the path says', async () => {
    writeFileSync(path.join(h.dataDir!, 'outside.txt'), 'outside secret');
    await h.storage.put('ws/11/inside', Buffer.from('inside'), { contentType: 'text/plain' });
    const origin = h.reachable((await h.storage.createDownloadUrl('ws/11/inside', { filename: 'x', expiresInSeconds: 60 })).url);
    const base = new URL('/', origin).toString();
    for (const attempt of [
      'files/download/..%2F..%2Foutside.txt',
      'files/download/%2E%2E/outside.txt',
      'files/download/ws/11/..%2F..%2F..%2F..%2Foutside.txt',
      'files/download/.meta/ws/11/inside.json',
    ]) {
      const res = await fetch(`${base}${attempt}?fn=x&exp=9999999999&sig=x`);
      expect([400, 403, 404]).toContain(res.status);
      expect(await res.text()).not.toContain('secret');
    }
  });
});
