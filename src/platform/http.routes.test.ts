import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../test/support/app.js';
import { newUser } from '../../test/support/factories.js';

const METRICS_TOKEN = 'metrics-token-0123456789';
const t = useTestApp({ BODY_LIMIT_BYTES: '2048', METRICS_TOKEN });

describe('operations endpoints', () => {
  it('/healthz answers without authentication', async () => {
    const res = await t.get('/healthz');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('/readyz reports each dependency', async () => {
    const res = await t.get('/readyz');
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('ok');
    expect(res.json().checks.database).toBe('ok');
  });

  it('/metrics counts requests by route pattern, not raw URL', async () => {
    const user = await newUser(t);
    await t.get('/api/workspaces/00000000-0000-4000-8000-000000000001/', user);
    const res = await t.request('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/plain/);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\/api\/workspaces\/:id\/",status="403"\} \d+/);
    expect(res.body).toMatch(/http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/api\/workspaces\/:id\/"/);
    expect(res.body).not.toContain('00000000-0000-4000-8000-000000000001');
    expect(res.body).toContain('process_cpu_user_seconds_total');
  });
});

describe('OpenAPI', () => {
  it('serves an OpenAPI 3.2 document at /api/schema/ describing the routes', async () => {
    const res = await t.get('/api/schema/');
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.2.0');
    expect(doc.paths['/api/workspaces/']).toBeDefined();
    expect(doc.paths['/auth/token/login/'].post.requestBody).toBeDefined();
    expect(doc.components.securitySchemes.sessionToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('serves the docs UI at /api/docs/', async () => {
    const res = await t.get('/api/docs/');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
  });

  // Built at its first request (platform/docs-ui.ts), answered through the main app's routes.
  it('does not load the docs UI plugin with the app (start-up time)', () => {
    expect(t.app.hasPlugin('@fastify/swagger')).toBe(true);
    expect(t.app.hasPlugin('@fastify/swagger-ui')).toBe(false);
  });

  it('serves the docs UI assets, document and redirects as the plugin does, with the app\'s headers and 404', async () => {
    const css = await t.get('/api/docs/static/swagger-ui.css');
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/text\/css/);
    expect(css.headers['x-request-id']).toBeDefined();
    expect(css.headers['x-content-type-options']).toBe('nosniff');
    const head = await t.request('HEAD', '/api/docs/static/swagger-ui.css');
    expect(head.statusCode).toBe(200);
    expect(Number(head.headers['content-length'])).toBe(css.rawPayload.length);
    expect(head.rawPayload.length).toBe(0);
    const redirect = await t.get('/api/docs/static/index.html');
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('/api/docs/');
    expect(redirect.headers['content-type']).toBeUndefined();
    const document = await t.get('/api/docs/json');
    expect(document.statusCode).toBe(200);
    expect(document.json()).toEqual((await t.get('/api/schema/')).json());
    for (const url of ['/api/docs/static/nothing.js', '/api/docs/static/../../package.json']) {
      const missing = await t.get(url);
      expect(missing.statusCode, url).toBe(404);
      expect(missing.json()).toEqual({ detail: 'Not found.', code: 'not_found' });
    }
  });
});

describe('error contract', () => {
  it('answers unknown routes with a JSON 404', async () => {
    const res = await t.get('/api/nothing-here/');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'Not found.', code: 'not_found' });
  });

  it('answers an oversized body with 413', async () => {
    const res = await t.post('/auth/users/', { email: 'a@example.com', password: 'x'.repeat(4000) });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe('payload_too_large');
  });

  it('answers an unsupported content type with 415', async () => {
    const res = await t.request('POST', '/auth/token/login/', {
      body: 'email=a',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().code).toBe('unsupported_media_type');
  });

  it('names every invalid field in `errors`', async () => {
    const res = await t.post('/auth/users/', { email: 'nope', password: 1 });
    expect(res.statusCode).toBe(400);
    expect(Object.keys(res.json().errors).sort()).toEqual(['email', 'password']);
  });

  it('echoes a sane X-Request-Id and replaces a hostile one', async () => {
    const given = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers['x-request-id']).toBe('abc-123');
    const hostile = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'a b\u0000c' } });
    expect(hostile.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
