import { describe, expect, it } from 'vitest';
import { useTestApp } from '../test/support/app.js';
import { commonErrors, isUndocumentedRoute, openApiPath } from './platform/openapi.js';
import { allOperationDocs } from './openapi.js';

type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Array<{ in?: string; $ref?: string }>;
  responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
};
type Document = { paths: Record<string, Record<string, Operation>>; tags: Array<{ name: string; description?: string }> };

/*
 * The completeness half of the API contract; the other half (every status the suite saw is
 * documented) runs after the whole suite, in test/support/global-setup.ts.
 */
describe('the OpenAPI document', () => {
  const t = useTestApp();

  function documentedRoutes() {
    const document = t.app.swagger() as unknown as Document;
    const routes = [...new Set(t.app.registeredRoutes)].filter((key) => !isUndocumentedRoute(key)).sort();
    return { document, routes };
  }

  const operationOf = (document: Document, key: string) => {
    const [method, url] = key.split(' ') as [string, string];
    return document.paths[openApiPath(url)]?.[method.toLowerCase()];
  };

  it('has every registered route with an operationId, summary, description, tags and its kind of errors', () => {
    const { document, routes } = documentedRoutes();
    expect(routes.length).toBeGreaterThan(100);
    const problems: string[] = [];
    for (const key of routes) {
      const operation = operationOf(document, key);
      if (!operation) {
        problems.push(`${key}: not in the document`);
        continue;
      }
      const missing = (['operationId', 'summary', 'description'] as const).filter((field) => !operation[field]);
      if (!operation.tags?.length) missing.push('tags' as never);
      if (missing.length) problems.push(`${key}: no ${missing.join(', ')} (add it to the domain's *.docs.ts)`);
      const method = key.split(' ')[0]!;
      const anonymous = Array.isArray(operation.security) && operation.security.length === 0;
      const hasPathParams = (operation.parameters ?? []).some((parameter) => parameter.in === 'path');
      const idempotent = (operation.parameters ?? []).some((parameter) => parameter.$ref?.endsWith('/IdempotencyKey'));
      const implied = commonErrors({ method, auth: anonymous ? 'none' : 'user', hasPathParams, idempotent });
      for (const status of Object.keys(implied)) {
        const media = operation.responses?.[status]?.content?.['application/json'];
        if (media?.schema?.$ref !== '#/components/schemas/Error') problems.push(`${key}: no ${status} error response`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('has unique snake_case operationIds, one docs entry per route and only declared tags', () => {
    const { document, routes } = documentedRoutes();
    const ids = routes.map((key) => operationOf(document, key)?.operationId).filter(Boolean);
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
    expect(ids.filter((id) => !/^[a-z]+(_[a-z0-9]+)+$/.test(id!))).toEqual([]);
    // A docs entry whose route is gone (renamed, removed) is dead documentation.
    const registered = new Set(t.app.registeredRoutes);
    expect(Object.keys(allOperationDocs()).filter((key) => !registered.has(key))).toEqual([]);
    const declared = new Set(document.tags.filter((tag) => tag.description).map((tag) => tag.name));
    const used = new Set(routes.flatMap((key) => operationOf(document, key)?.tags ?? []));
    expect([...used].filter((tag) => !declared.has(tag))).toEqual([]);
  });

  it('describes the streamed replies as server-sent events with one schema per event', () => {
    const { document } = documentedRoutes();
    const stream = document.paths['/api/workspaces/{ws}/chats/{session}/messages/stream/']!.post!;
    expect(stream.operationId).toBe('messages_stream');
    const events = stream.responses?.['200']?.content?.['text/event-stream'] as unknown as {
      itemSchema: { oneOf: Array<{ properties: { event: { const: string } } }> };
    };
    expect(events.itemSchema.oneOf.map((event) => event.properties.event.const)).toEqual(['delta', 'tool', 'done', 'error']);
    expect(JSON.stringify(stream.responses?.['200'])).toContain('X-Stream-Id');
    expect(stream.description).toContain('stream/stop/');
  });

  it('serves the document at /api/schema/', async () => {
    const res = await t.get('/api/schema/');
    expect(res.statusCode).toBe(200);
    expect(res.json().openapi).toBe('3.2.0');
  });
});
