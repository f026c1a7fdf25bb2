import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerFetch } from './provider-fetch.js';

/** A local server whose answer each test chooses by path; it records what it received. */
let base = '';
const received: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string }[] = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    received.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    if (req.url === '/json') {
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'abc', 'set-cookie': ['a=1', 'b=2'] });
      res.end(JSON.stringify({ ok: true }));
    } else if (req.url === '/error') {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'slow down' } }));
    } else if (req.url === '/redirect') {
      res.writeHead(307, { location: '/json' });
      res.end();
    } else if (req.url === '/reset-content') {
      res.writeHead(205);
      res.end();
    } else if (req.url === '/gzip') {
      // A gateway that compresses whatever the client asked for.
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(JSON.stringify({ compressed: true })));
    } else if (req.url === '/empty') {
      res.writeHead(204);
      res.end();
    } else if (req.url === '/stream') {
      // The first event now, the rest only when the test says so: the body must stream.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      releaseStream = () => res.end('data: last\n\n');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
});
let releaseStream: () => void = () => undefined;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('providerFetch (the provider clients\' fetch)', () => {
  it('sends the method, headers and string body, and answers a Response with status, status text, headers and body', async () => {
    const response = await providerFetch(`${base}/json`, {
      method: 'post',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ model: 'm' }),
    });
    expect(response).toBeInstanceOf(Response);
    expect(response.status).toBe(201);
    expect(response.statusText).toBe('Created');
    expect(response.ok).toBe(true);
    expect(response.headers.get('x-request-id')).toBe('abc');
    expect(response.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(await response.json()).toEqual({ ok: true });
    const request = received.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', url: '/json', body: '{"model":"m"}' });
    expect(request.headers.authorization).toBe('Bearer sk-test');
  });

  it('answers an error status as a Response (the SDK reads its body for the error), not a rejection', async () => {
    const response = await providerFetch(`${base}/error`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(429);
    expect(response.ok).toBe(false);
    expect(await response.json()).toEqual({ error: { message: 'slow down' } });
  });

  it('does not follow a redirect: the 3xx is the answer', async () => {
    const response = await providerFetch(`${base}/redirect`, { method: 'GET' });
    expect(response.status).toBe(307);
    expect(response.headers.get('location')).toBe('/json');
  });

  it('answers 204 with no body', async () => {
    const response = await providerFetch(`${base}/empty`);
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
  });

  it('streams the body: the first event is readable before the server ends it', async () => {
    const response = await providerFetch(`${base}/stream`, { method: 'POST', body: '{}' });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('data: first\n\n');
    releaseStream();
    let rest = '';
    for (let part = await reader.read(); !part.done; part = await reader.read()) rest += new TextDecoder().decode(part.value);
    expect(rest).toBe('data: last\n\n');
  });

  it('rejects the body read once the signal aborts mid-stream', async () => {
    const controller = new AbortController();
    const response = await providerFetch(`${base}/stream`, { method: 'POST', body: '{}', signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await expect(reader.read()).rejects.toBeDefined();
    releaseStream();
  });

  it('rejects with the signal\'s reason for a signal already aborted, like fetch', async () => {
    await expect(providerFetch(`${base}/json`, { method: 'POST', body: '{}', signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    const reason = new Error('stopped by the user');
    await expect(providerFetch(`${base}/json`, { method: 'POST', body: '{}', signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it('asks for an uncompressed answer, and decodes a compressed one (without sending the request again)', async () => {
    await providerFetch(`${base}/json`, { method: 'POST', body: '{}' });
    expect(received.at(-1)!.headers['accept-encoding']).toBe('identity');
    const before = received.length;
    const response = await providerFetch(`${base}/gzip`, { method: 'POST', body: '{}' });
    expect(await response.json()).toEqual({ compressed: true });
    expect(received.length).toBe(before + 1);
  });

  it('answers 205 with no body', async () => {
    const response = await providerFetch(`${base}/reset-content`);
    expect(response.status).toBe(205);
    expect(response.body).toBeNull();
  });

  it('fails like fetch when there is no answer: TypeError "fetch failed" with the cause (which the SDK retries)', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await providerFetch(`http://127.0.0.1:${port}/x`, { method: 'POST', body: '{}' }).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
  });

  it('hands a multipart body (an audio upload) to the global fetch unchanged', async () => {
    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('file', new Blob([new Uint8Array([1, 2, 3])]), 'a.wav');
    const response = await providerFetch(`${base}/json`, { method: 'POST', body: form });
    expect(response.status).toBe(201);
    const request = received.at(-1)!;
    expect(request.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(request.body).toContain('name="model"');
  });
});
