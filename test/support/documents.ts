import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import type { TestUser } from './factories.js';

/*
 * Helpers for the knowledge-base, document and ingestion tests: the committed document fixtures,
 * the three-step presigned upload (upload/ → PUT to the signed URL → confirm-upload/), a small
 * local HTTP server to import web pages from, and a PLANS_FILE with tiny limits.
 */

const FIXTURES = new URL('../fixtures/documents/', import.meta.url);

/** The bytes of a committed fixture under test/fixtures/documents/. */
export const fixture = (name: string): Buffer => readFileSync(new URL(name, FIXTURES));

/** Every supported type: fixture, content type, and a phrase its extracted text contains. */
export const FIXTURE_FILES = [
  { format: 'pdf', file: 'sample.pdf', contentType: 'application/pdf', phrase: 'first page talks about apples' },
  {
    format: 'docx',
    file: 'sample.docx',
    contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    phrase: 'Revenue grew by 12 percent',
  },
  { format: 'html', file: 'article.html', contentType: 'text/html; charset=utf-8', phrase: 'living culture of wild yeast' },
  { format: 'markdown', file: 'guide.md', contentType: 'text/markdown', phrase: 'Deployment Guide' },
  { format: 'text', file: 'notes.txt', contentType: 'text/plain', phrase: 'quarterly review is scheduled for Tuesday' },
  { format: 'csv', file: 'inventory.csv', contentType: 'text/csv', phrase: 'Stainless steel whisk' },
  { format: 'json', file: 'config.json', contentType: 'application/json', phrase: 'search-api' },
] as const;

export const docsBase = (wsId: string) => `/api/workspaces/${wsId}/documents/`;
export const kbsBase = (wsId: string) => `/api/workspaces/${wsId}/knowledge-bases/`;

export interface UploadGrant {
  url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expires_at: string;
}

/** Step 1: asks for an upload URL; asserts 201. */
export async function startUpload(
  t: TestApp,
  wsId: string,
  as: TestUser,
  input: { name: string; content_type: string; size: number; knowledge_base_ids?: string[]; checksum_sha256?: string },
) {
  const res = await t.post(`${docsBase(wsId)}upload/`, input, as);
  expect(res.statusCode, res.body).toBe(201);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests index freely into bodies
  return res.json() as { document: any; upload: UploadGrant };
}

/** Step 2: PUTs the bytes to the signed URL the way a client would (the app serves local storage). */
export async function putToSignedUrl(t: TestApp, upload: UploadGrant, bytes: Buffer) {
  const url = new URL(upload.url);
  return t.app.inject({ method: 'PUT', url: `${url.pathname}${url.search}`, headers: upload.headers, payload: bytes });
}

/** Upload, PUT and confirm; returns the document and the confirm response (not yet drained). */
export async function uploadFile(
  t: TestApp,
  wsId: string,
  as: TestUser,
  file: { name: string; contentType: string; bytes: Buffer; knowledge_base_ids?: string[] },
) {
  const { document, upload } = await startUpload(t, wsId, as, {
    name: file.name,
    content_type: file.contentType,
    size: file.bytes.length,
    ...(file.knowledge_base_ids ? { knowledge_base_ids: file.knowledge_base_ids } : {}),
  });
  const put = await putToSignedUrl(t, upload, file.bytes);
  expect(put.statusCode, put.body).toBe(200);
  const confirm = await t.post(`${docsBase(wsId)}${document.id}/confirm-upload/`, {}, as);
  expect(confirm.statusCode, confirm.body).toBe(202);
  return { document: document as { id: string; name: string }, confirm: confirm.json() };
}

/** Uploads a file and waits for its ingestion; returns the processing-status body. */
export async function ingestFile(
  t: TestApp,
  wsId: string,
  as: TestUser,
  file: { name: string; contentType: string; bytes: Buffer; knowledge_base_ids?: string[] },
) {
  const { document } = await uploadFile(t, wsId, as, file);
  await t.deps.jobs.drain();
  const status = await t.get(`${docsBase(wsId)}${document.id}/processing-status/`, as);
  expect(status.statusCode, status.body).toBe(200);
  return { document, status: status.json() };
}

/** A ready text document: the quickest way to get chunks in place. */
export async function readyTextDocument(t: TestApp, wsId: string, as: TestUser, text: string, name = 'notes.txt', kbIds?: string[]) {
  const { document, status } = await ingestFile(t, wsId, as, {
    name,
    contentType: 'text/plain',
    bytes: Buffer.from(text, 'utf8'),
    ...(kbIds ? { knowledge_base_ids: kbIds } : {}),
  });
  expect(status.processing_status, JSON.stringify(status)).toBe('ready');
  return document;
}

/** Creates a knowledge base through the API; asserts 201. */
export async function createKb(t: TestApp, wsId: string, as: TestUser, body: Record<string, unknown> = {}) {
  const res = await t.post(kbsBase(wsId), { name: 'Handbook', ...body }, as);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; name: string };
}

/** Writes a PLANS_FILE overriding the free plan (tests pass the path as env PLANS_FILE). */
export function writePlansFile(dir: string, free: Record<string, unknown>): string {
  const file = path.join(dir, `plans-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ free }));
  return file;
}

// --- A local web server to import pages from ----------------------------------------------------

export type Route = (req: IncomingMessage, res: ServerResponse) => void;

export interface LocalSite {
  url: string;
  server: Server;
  routes: Map<string, Route>;
  /** Paths requested, in order. */
  hits: string[];
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 answering from `routes` (by path, query ignored); 404 otherwise. */
export async function startLocalSite(): Promise<LocalSite> {
  const routes = new Map<string, Route>();
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://local');
    hits.push(`${url.pathname}${url.search}`);
    const route = routes.get(url.pathname);
    if (route) return route(req, res);
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    routes,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export const send =
  (status: number, body: string | Buffer, contentType = 'text/html; charset=utf-8'): Route =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': contentType }).end(body);
  };

/** A pending upload made through the service (no file, no ingestion): enough for link and access tests. */
export async function newDocument(
  t: TestApp,
  wsId: string,
  as: { id: number },
  options: { name?: string; knowledge_base_ids?: string[] } = {},
) {
  const { document } = await t.deps.services.documents.upload(as.id, wsId, {
    name: options.name ?? 'draft.txt',
    content_type: 'text/plain',
    size: 10,
    knowledge_base_ids: options.knowledge_base_ids ?? [],
  });
  return document;
}

/** Throttles lifted: user ids restart at 1 after every truncation, so tests would share counters. */
export const LIFTED_THROTTLES = { THROTTLE_DOCUMENT_UPLOADS: '100000/hour' } as const;

