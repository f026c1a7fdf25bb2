import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../test/support/app.js';
import { newUser } from '../../test/support/factories.js';
import { normaliseOrigins, registerCors } from './cors.js';
import { openEventStream } from './sse.js';

const ALLOWED = 'https://app.example.com';
const t = useTestApp({ CORS_ALLOWED_ORIGINS: `${ALLOWED}, http://localhost:5173/` });

const corsHeaders = (headers: Record<string, unknown>) =>
  Object.keys(headers).filter((name) => name.toLowerCase().startsWith('access-control-'));

const preflight = (app: typeof t, origin: string, url = '/api/workspaces/') =>
  app.request('OPTIONS', url, {
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, idempotency-key',
    },
  });

describe('CORS_ALLOWED_ORIGINS', () => {
  it('answers a preflight from an allowed origin with the allowed methods and headers', async () => {
    for (const origin of [ALLOWED, 'http://localhost:5173']) {
      const res = await preflight(t, origin);
      expect(res.statusCode, res.body).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(String(res.headers['access-control-allow-methods']).split(/,\s*/)).toEqual(
        expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
      );
      expect(String(res.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/)).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'idempotency-key']),
      );
      expect(res.headers['access-control-max-age']).toBe('600');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(String(res.headers.vary)).toContain('Origin');
    }
  });

  it('lets an allowed origin read the response and the exposed headers, errors included', async () => {
    const alice = await newUser(t);
    const ok = await t.request('GET', '/api/users/me/', { as: alice, headers: { origin: ALLOWED } });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(String(ok.headers['access-control-expose-headers']).split(/,\s*/)).toEqual([
      'X-Request-Id',
      'X-Stream-Id',
      'Retry-After',
      'Idempotent-Replayed',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
    ]);
    const refused = await t.request('GET', '/api/users/me/', { headers: { origin: ALLOWED } });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['access-control-allow-origin']).toBe(ALLOWED);
  });

  it('gives a disallowed origin, or a request without one, no CORS header at all', async () => {
    const alice = await newUser(t);
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.test', 'null', 'http://app.example.com']) {
      const pre = await preflight(t, origin);
      expect(pre.statusCode).toBe(404);
      expect(corsHeaders(pre.headers), origin).toEqual([]);
      const res = await t.request('GET', '/api/users/me/', { as: alice, headers: { origin } });
      expect(res.statusCode).toBe(200);
      expect(corsHeaders(res.headers), origin).toEqual([]);
    }
    const plain = await t.get('/api/users/me/', alice);
    expect(corsHeaders(plain.headers)).toEqual([]);
  });

  describe('by default (no origins)', () => {
    const closed = useTestApp();
    it('answers no origin', async () => {
      const pre = await preflight(closed, ALLOWED);
      expect(pre.statusCode).toBe(404);
      expect(corsHeaders(pre.headers)).toEqual([]);
      const res = await closed.request('GET', '/healthz', { headers: { origin: ALLOWED } });
      expect(corsHeaders(res.headers)).toEqual([]);
    });
  });

  it('accepts exact origins only, and stops start-up on anything else', () => {
    expect([...normaliseOrigins(['https://App.Example.com/', 'http://localhost:5173'])]).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
    ]);
    for (const bad of ['app.example.com', 'https://app.example.com/path', 'ftp://files.example.com', '*']) {
      expect(() => normaliseOrigins([bad]), bad).toThrow(/CORS_ALLOWED_ORIGINS/);
    }
  });
});

describe('X-Content-Type-Options: nosniff', () => {
  it('is on JSON answers, errors, 404s, preflights and downloads', async () => {
    const alice = await newUser(t);
    const responses = [
      await t.get('/api/users/me/', alice),
      await t.get('/healthz'),
      await t.get('/api/users/me/'),
      await t.post('/api/workspaces/', { name: '' }, alice),
      await t.get('/no/such/route/'),
      await t.request('DELETE', '/api/users/me/', { as: alice }),
      await preflight(t, ALLOWED),
      await t.request('GET', '/files/download/nothing?exp=1&sig=x'),
    ];
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 403, 400, 404, 404, 204, 403]);
    for (const res of responses) expect(res.headers['x-content-type-options'], res.body).toBe('nosniff');
  });

  it('is on server-sent event streams too, with the CORS headers set before the stream opened', async () => {
    const app = Fastify();
    app.addHook('onSend', async (_request, reply) => {
      reply.header('x-content-type-options', 'nosniff');
    });
    await registerCors(app, [ALLOWED]);
    app.get('/stream', (_request, reply) => {
      const stream = openEventStream(reply, { headers: { 'X-Stream-Id': 'abc' } });
      stream.send('done', {});
      stream.end();
    });
    const res = await app.inject({ method: 'GET', url: '/stream', headers: { origin: ALLOWED } });
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(res.headers['x-stream-id']).toBe('abc');
    await app.close();
  });
});
