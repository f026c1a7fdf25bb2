import { tmpdir } from 'node:os';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, useTestApp } from '../../../test/support/app.js';
import {
  createKb,
  docsBase,
  fixture,
  type LocalSite,
  LIFTED_THROTTLES,
  send,
  startLocalSite,
  writePlansFile,
} from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { createSafeFetcher } from '../../platform/fetch/fetcher.js';
import { documentChunks, documents, ingestionTasks } from '../documents/documents.table.js';

/*
 * Imports from a URL: a real local web server stands in for the internet (allowed with
 * URL_FETCH_ALLOWED_PRIVATE_HOSTS=127.0.0.1/32) and for YouTube (YOUTUBE_BASE_URL).
 */

const VIDEO = 'dQw4w9WgXcQ';
const WATCH_PAGE = (base: string) => `<!DOCTYPE html><html><head><title>Tide pools - YouTube</title>
<meta property="og:title" content="Tide pools"></head><body><script>var ytInitialPlayerResponse = {"captions":{"playerCaptionsTracklistRenderer":
{"captionTracks":[{"baseUrl":"${base}/api/timedtext?v=${VIDEO}&lang=en","languageCode":"en"}]}}};</script></body></html>`;
const TRANSCRIPT = `<?xml version="1.0" encoding="utf-8" ?><transcript>
<text start="0" dur="1">Hello</text>
<text start="1" dur="2.5">and welcome to the &amp;#39;tide pool&amp;#39; tour</text>
<text start="3.5" dur="2">Sea anemones &amp;amp; starfish live here.</text>
</transcript>`;

let site: LocalSite;
const env: Record<string, string> = { ...LIFTED_THROTTLES, URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32' };
beforeAll(async () => {
  site = await startLocalSite();
  site.routes.set('/article', send(200, fixture('article.html')));
  site.routes.set('/watch', send(200, WATCH_PAGE('https://www.youtube.com')));
  site.routes.set('/api/timedtext', send(200, TRANSCRIPT, 'text/xml; charset=utf-8'));
  site.routes.set('/missing', send(404, 'gone'));
  site.routes.set('/to-private', (_req, res) => res.writeHead(302, { location: 'http://10.0.0.1/admin' }).end());
  site.routes.set('/to-metadata', (_req, res) => res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' }).end());
  env.YOUTUBE_BASE_URL = site.url;
});
afterAll(async () => {
  await site?.close();
});
const t = useTestApp(env);

const db = () => t.deps.database.db;
const chunkText = async (id: string) =>
  (await db().select().from(documentChunks).where(eq(documentChunks.documentId, id)).orderBy(documentChunks.chunkIndex))
    .map((c) => c.content)
    .join('\n');
const documentRow = async (id: string) => (await db().select().from(documents).where(eq(documents.id, id)))[0];

async function setup(app: TestApp = t) {
  const owner = await newUser(app);
  const ws = await newWorkspace(app, owner);
  return { owner, ws, base: docsBase(ws.id) };
}

describe('web pages', () => {
  it('202 {document, task}; the page is fetched, its readable text chunked and the page stored', async () => {
    const { owner, ws, base } = await setup();
    const kb = await createKb(t, ws.id, owner);
    const url = `${site.url}/article?utm=1`;
    const res = await t.post(`${base}from-url/`, { url, knowledge_base_ids: [kb.id] }, owner);
    expect(res.statusCode, res.body).toBe(202);
    const { document, task } = res.json();
    expect(document).toEqual({
      id: expect.any(String),
      workspace: ws.id,
      name: expect.stringContaining('127.0.0.1'),
      content_type: 'text/html',
      size: 0,
      source_kind: 'web_url',
      source_url: url,
      processing_status: 'pending',
      language: null,
      uploaded_by: owner.id,
      knowledge_base_ids: [kb.id],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(task).toEqual({
      id: expect.any(String),
      document: document.id,
      task_id: expect.any(String),
      status: 'PENDING',
      error_message: null,
      created_at: expect.any(String),
    });

    await t.deps.jobs.drain();
    const status = (await t.get(`${base}${document.id}/processing-status/`, owner)).json();
    expect(status).toMatchObject({ processing_status: 'ready', task: { id: task.id, status: 'SUCCESS' } });
    const text = await chunkText(document.id);
    expect(text).toContain('A sourdough starter is a living culture');
    expect(text).not.toContain('TRACKING_SCRIPT_TEXT');
    expect(site.hits).toContain('/article?utm=1');

    const html = fixture('article.html');
    expect(await documentRow(document.id)).toMatchObject({ size: html.length, contentType: 'text/html', storedAt: expect.any(Date) });
    const download = await t.get(`${base}${document.id}/download-url/`, owner);
    expect(download.statusCode, download.body).toBe(200);
    const file = new URL(download.json().url);
    const served = await t.app.inject({ method: 'GET', url: `${file.pathname}${file.search}` });
    expect(served.statusCode).toBe(200);
    expect(served.headers['content-disposition']).toMatch(/^attachment;/);
    expect(served.rawPayload.equals(html)).toBe(true);
  });

  it('uses the given name', async () => {
    const { owner, base } = await setup();
    const res = await t.post(`${base}from-url/`, { url: `${site.url}/article`, name: 'Sourdough care' }, owner);
    expect(res.json().document.name).toBe('Sourdough care');
    await t.deps.jobs.drain();
  });

  it('a page answering 404 fails with a user-facing message', async () => {
    const { owner, base } = await setup();
    const { document } = (await t.post(`${base}from-url/`, { url: `${site.url}/missing` }, owner)).json();
    await t.deps.jobs.drain();
    const status = (await t.get(`${base}${document.id}/processing-status/`, owner)).json();
    expect(status).toMatchObject({
      processing_status: 'failed',
      task: { status: 'FAILURE', error_message: 'The page answered with HTTP status 404.' },
    });
  });

  it.each([
    ['a private address', '/to-private'],
    ['the cloud metadata address', '/to-metadata'],
  ])('a redirect to %s fails the task', async (_label, path) => {
    const { owner, base } = await setup();
    const res = await t.post(`${base}from-url/`, { url: `${site.url}${path}` }, owner);
    expect(res.statusCode).toBe(202);
    await t.deps.jobs.drain();
    const status = (await t.get(`${base}${res.json().document.id}/processing-status/`, owner)).json();
    expect(status).toMatchObject({ processing_status: 'failed', task: { status: 'FAILURE' } });
    expect(status.task.error_message).toMatch(/redirects to .*not allowed/);
    expect(status.task.error_message).not.toMatch(/10\.0\.0\.1|169\.254/);
    expect(await chunkText(res.json().document.id)).toBe('');
  });

  it('deleting an import while it is fetched leaves no stored page behind', async () => {
    const { owner, base } = await setup();
    let release!: () => void;
    let requested!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const arrived = new Promise<void>((resolve) => (requested = resolve));
    site.routes.set('/slow', (_req, res) => {
      requested();
      void gate.then(() => res.writeHead(200, { 'content-type': 'text/html' }).end(fixture('article.html')));
    });
    const { document } = (await t.post(`${base}from-url/`, { url: `${site.url}/slow` }, owner)).json();
    await arrived;
    const key = (await documentRow(document.id))!.storageKey;
    expect((await t.delete(`${base}${document.id}/`, owner)).statusCode).toBe(204);
    release();
    await t.deps.jobs.drain();
    expect(await documentRow(document.id)).toBeUndefined();
    expect(await t.deps.storage.head(key)).toBeNull();
    expect(await db().select().from(documentChunks)).toEqual([]);
  });
});

describe('YouTube', () => {
  it.each([`https://www.youtube.com/watch?v=${VIDEO}`, `https://youtu.be/${VIDEO}`, `https://m.youtube.com/shorts/${VIDEO}`])(
    '%s is classified youtube and imported as its transcript',
    async (url) => {
      const { owner, base } = await setup();
      const res = await t.post(`${base}from-url/`, { url }, owner);
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json().document).toMatchObject({ source_kind: 'youtube', source_url: url });
      await t.deps.jobs.drain();

      const id = res.json().document.id;
      const status = (await t.get(`${base}${id}/processing-status/`, owner)).json();
      expect(status).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS' } });
      expect(await chunkText(id)).toBe("Hello\nand welcome to the 'tide pool' tour\nSea anemones & starfish live here.");
      expect(await documentRow(id)).toMatchObject({ contentType: 'text/plain' });
      // Fetched from YOUTUBE_BASE_URL by video id only, never from the user's host.
      expect(site.hits).toEqual(expect.arrayContaining([`/watch?v=${VIDEO}`, `/api/timedtext?v=${VIDEO}&lang=en`]));
    },
  );

  it('a video without captions fails with a user-facing message', async () => {
    const { owner, base } = await setup();
    site.routes.set('/watch', send(200, '<html><body>No captions here</body></html>'));
    try {
      const res = await t.post(`${base}from-url/`, { url: `https://www.youtube.com/watch?v=${VIDEO}` }, owner);
      await t.deps.jobs.drain();
      const status = (await t.get(`${base}${res.json().document.id}/processing-status/`, owner)).json();
      expect(status).toMatchObject({
        processing_status: 'failed',
        task: { status: 'FAILURE', error_message: 'This video has no transcript or captions that can be imported.' },
      });
    } finally {
      site.routes.set('/watch', send(200, WATCH_PAGE('https://www.youtube.com')));
    }
  });
});

describe('refused URLs', () => {
  it.each([
    ['file:///etc/passwd'],
    ['ftp://example.com/file.txt'],
    ['javascript:alert(1)'],
    ['not a url'],
    ['http://127.0.0.2/'],
    ['http://localhost/'],
    ['http://[::1]/'],
    ['http://169.254.169.254/latest/meta-data/'],
    ['http://[::ffff:169.254.169.254]/'],
    ['http://10.0.0.1/'],
    ['http://0x7f000002/'],
    ['http://user:secret@example.com/'],
    ['http://example.com@127.0.0.2/'],
    ['https://intranet/'],
  ])('%s → 400 url_not_allowed, nothing created', async (url) => {
    const { owner, base } = await setup();
    const res = await t.post(`${base}from-url/`, { url }, owner);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 'url_not_allowed', detail: expect.any(String) });
    expect(await db().select().from(documents)).toEqual([]);
    expect(await db().select().from(ingestionTasks)).toEqual([]);
  });

  it.each([
    ['no url', {}],
    ['an empty url', { url: '' }],
    ['a url over 2048 characters', { url: `https://example.com/${'a'.repeat(2050)}` }],
    ['a bad knowledge base id', { url: 'https://example.com/', knowledge_base_ids: ['x'] }],
  ])('%s → 400 validation_error', async (_label, body) => {
    const { owner, base } = await setup();
    const res = await t.post(`${base}from-url/`, body, owner);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_error');
    expect(await db().select().from(documents)).toEqual([]);
  });
});

describe('without the private-host allow list', () => {
  // A second app: no URL_FETCH_ALLOWED_PRIVATE_HOSTS, a tiny storage limit, and a fetcher whose
  // DNS answers as an attacker's name server would (a public-looking name pointing inside).
  let app: TestApp;
  beforeAll(async () => {
    const fetcher = createSafeFetcher({
      allowedPrivateHosts: ['127.0.0.1/32'],
      resolver: async (host) => [{ address: host === 'pages.example.com' ? '127.0.0.1' : '10.0.0.7', family: 4 }],
    });
    app = await createTestApp(
      { ...LIFTED_THROTTLES, PLANS_FILE: writePlansFile(tmpdir(), { max_storage_bytes: 1000 }) },
      { fetcher },
    );
  });
  afterAll(async () => {
    await app?.close();
  });

  it('refuses http://127.0.0.1 synchronously', async () => {
    const { owner, base } = await setup(app);
    const res = await app.post(`${base}from-url/`, { url: `${site.url}/article` }, owner);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('url_not_allowed');
    expect(await app.deps.database.db.select().from(documents)).toEqual([]);
  });

  it('a name that passes the static check but resolves privately fails the task at fetch time', async () => {
    const { owner, base } = await setup(app);
    const res = await app.post(`${base}from-url/`, { url: 'http://rebind.example.com/secrets' }, owner);
    expect(res.statusCode, res.body).toBe(202);
    await app.deps.jobs.drain();
    const status = (await app.get(`${base}${res.json().document.id}/processing-status/`, owner)).json();
    expect(status).toMatchObject({ processing_status: 'failed', task: { status: 'FAILURE' } });
    expect(status.task.error_message).toMatch(/rebind\.example\.com resolves to .*not allowed/);
    expect(status.task.error_message).not.toContain('10.0.0.7');
  });

  it('a page larger than the storage left fails with a user-facing message, storing nothing', async () => {
    const { owner, base } = await setup(app);
    const port = new URL(site.url).port;
    const res = await app.post(`${base}from-url/`, { url: `http://pages.example.com:${port}/article` }, owner);
    expect(res.statusCode, res.body).toBe(202);
    await app.deps.jobs.drain();
    const status = (await app.get(`${base}${res.json().document.id}/processing-status/`, owner)).json();
    expect(status).toMatchObject({
      processing_status: 'failed',
      task: { status: 'FAILURE', error_message: "Storing this page would exceed the plan's storage limit." },
    });
    const [row] = await app.deps.database.db.select().from(documents);
    expect(await app.deps.storage.head(row!.storageKey)).toBeNull();
  });
});
