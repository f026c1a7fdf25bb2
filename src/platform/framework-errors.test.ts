import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../test/support/app.js';
import { newUser, newWorkspace } from '../../test/support/factories.js';
import { captureLog } from '../../test/support/log.js';
import { rawRequest } from '../../test/support/raw-http.js';

/*
 * Errors raised by the framework or by Node's HTTP parser, before any route, hook or error
 * handler of ours runs, over real HTTP (app.inject does not go through Node's parser). Every one
 * answers `{detail, code}` with a truthful detail and never quotes the input. Before: 414
 * `{"error", "code": "FST_ERR_MAX_PARAM_LENGTH", "message": "<the path>"}` and 431 in Fastify's
 * `{"error", "message", "statusCode"}`, on /healthz too.
 */

const logs = captureLog('debug');
let t: TestApp;
let base: string;
let port: number;
beforeAll(async () => {
  t = await createTestApp({}, {}, { log: logs.log });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await t.close();
});

const MARKER = 'zq'.repeat(2_500); // 5,000 characters that must never come back

/** Sends raw bytes and returns the raw response (the server closes the connection or answers once). */
const raw = (bytes: string | Buffer) => rawRequest(port, bytes, { end: true });

function expectOurShape(status: number, body: string, expected: { status: number; code: string | string[] }) {
  expect(status, body.slice(0, 300)).toBe(expected.status);
  const json = JSON.parse(body) as Record<string, unknown>;
  expect(Object.keys(json).sort()).toEqual(['code', 'detail']);
  expect([expected.code].flat()).toContain(json.code);
  expect(typeof json.detail).toBe('string');
  expect(body).not.toContain('zqzq');
  expect(body).not.toContain('FST_');
}

async function fetchShape(path: string, init: RequestInit, expected: { status: number; code: string }) {
  const res = await fetch(`${base}${path}`, init);
  const body = await res.text();
  expectOurShape(res.status, body, expected);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('x-request-id')).toBeTruthy();
  return res;
}

describe('router errors (frameworkErrors)', () => {
  it('a 5,000-character path parameter is 414 uri_too_long, without the path', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const res = await fetchShape(`/api/workspaces/${ws.id}/chats/${MARKER}/`, { headers: { authorization: `Bearer ${owner.token}` } }, {
      status: 414,
      code: 'uri_too_long',
    });
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    await fetchShape(`/api/workspaces/${MARKER}/`, {}, { status: 414, code: 'uri_too_long' });
  });

  it('malformed percent-encoding in the path is 400 bad_url', async () => {
    await fetchShape(`/api/workspaces/%E0%A4%A${MARKER}/`, {}, { status: 400, code: 'bad_url' });
  });

  it('unknown routes and methods are 404 not_found, /healthz included', async () => {
    await fetchShape(`/healthz/${MARKER}`, {}, { status: 404, code: 'not_found' });
    await fetchShape('/healthz', { method: 'DELETE' }, { status: 404, code: 'not_found' });
    await fetchShape('/api/nothing-here/', { method: 'PATCH' }, { status: 404, code: 'not_found' });
  });
});

describe("Node's HTTP parser (clientErrorHandler)", () => {
  it.each(['/healthz', '/api/workspaces/', '/auth/users/me/'])('headers over the limit are 431 on %s', async (path) => {
    const res = await fetchShape(path, { headers: { 'x-padding': MARKER.repeat(4), authorization: `Bearer ${'s3cret'.repeat(10)}` } }, {
      status: 431,
      code: 'request_header_fields_too_large',
    });
    expect(res.headers.get('connection')).toBe('close');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('a request line or header Node cannot parse is 400 bad_request in our shape', async () => {
    const bad = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n`);
    expectOurShape(bad.status, bad.body, { status: 400, code: 'bad_request' });
    const nul = await raw(Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Evil: a\u0000b\r\n\r\n`, 'latin1'));
    expectOurShape(nul.status, nul.body, { status: 400, code: 'bad_request' });
    const method = await raw(`BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectOurShape(method.status, method.body, { status: 400, code: 'bad_request' });
  });

  it('the refused bytes (headers, tokens) are not logged', () => {
    const text = JSON.stringify(logs.lines());
    expect(text).not.toContain('s3cret');
    expect(text).toContain('HPE_HEADER_OVERFLOW');
  });
});

describe('body and content-type errors', () => {
  const json = { 'content-type': 'application/json' };

  it('malformed and empty JSON are 400 parse_error', async () => {
    await fetchShape('/auth/users/', { method: 'POST', headers: json, body: `{"email": "${MARKER}` }, { status: 400, code: 'parse_error' });
    await fetchShape('/auth/users/', { method: 'POST', headers: json, body: '' }, { status: 400, code: 'parse_error' });
  });

  it('an unsupported content type is 415 unsupported_media_type', async () => {
    await fetchShape('/auth/users/', { method: 'POST', headers: { 'content-type': `application/x-${MARKER}` }, body: 'x' }, {
      status: 415,
      code: 'unsupported_media_type',
    });
  });

  it('a body over BODY_LIMIT_BYTES is 413 payload_too_large', async () => {
    const body = JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(t.config.BODY_LIMIT_BYTES) });
    await fetchShape('/auth/users/', { method: 'POST', headers: json, body }, { status: 413, code: 'payload_too_large' });
  });

  it('a body shorter than its Content-Length is 400 in our shape', async () => {
    const res = await raw(`POST /auth/token/login/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"email":"a"}`);
    expectOurShape(res.status, res.body, { status: 400, code: ['bad_request', 'parse_error'] });
  });

  it('a NUL in a header value sent through inject (Node would refuse it on the wire) is 400 naming the header', async () => {
    const res = await t.request('GET', '/healthz', { headers: { 'x-thing': 'a\u0000b' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: 'Invalid input in headers.', code: 'validation_error', errors: { 'x-thing': ['Null characters are not allowed.'] } });
  });
});

describe('a closing app', () => {
  it('answers a request that still arrives with 503 service_unavailable in our shape', async () => {
    const closingApp = await createTestApp();
    await closingApp.app.listen({ port: 0, host: '127.0.0.1' });
    const { port: closingPort } = closingApp.app.server.address() as AddressInfo;
    const socket = connect(closingPort, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk) => received.push(chunk));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    // A first request whose body is still arriving keeps the connection busy while the app closes.
    const body = JSON.stringify({ email: 'a@example.com', password: 'not-the-password' });
    socket.write(`POST /auth/token/login/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = closingApp.app.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The rest of the body, and a second request pipelined behind it.
    socket.write(`${body.slice(5)}GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 3000))]);
    socket.destroy();
    await closed;
    await closingApp.deps.close();
    const text = Buffer.concat(received).toString('utf8');
    const second = text.slice(text.indexOf('HTTP/1.1', 1));
    expect(second).toMatch(/^HTTP\/1.1 503/);
    expect(second).toMatch(/retry-after: 5/i);
    const [, json = ''] = second.split('\r\n\r\n');
    expect(JSON.parse(json)).toEqual({ detail: 'Service temporarily unavailable, please retry.', code: 'service_unavailable' });
  });
});
