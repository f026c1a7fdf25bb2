import { SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../test/support/app.js';
import { chatWorld, injectStream } from '../../test/support/chat.js';
import { LIFTED_THROTTLES, readyTextDocument } from '../../test/support/documents.js';
import { type FakeModelServer, startFakeModelServer } from '../../test/support/fake-model-server.js';
import { truncateAll } from '../../test/support/db.js';
import { newUser, newWorkspace } from '../../test/support/factories.js';
import { backgroundJobs } from './queue/jobs.table.js';
import { currentTraceparent, startTracing, type Tracing, tracingEnabled, withSpan } from './tracing.js';

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('registers nothing: no provider, no context, spans are never made', async () => {
    expect(startTracing({ serviceName: 'test' })).toBeUndefined();
    expect(tracingEnabled()).toBe(false);
    // The API's global provider is still the no-op one: nothing was registered.
    expect(trace.getTracerProvider().getTracer('x').startSpan('probe').isRecording()).toBe(false);
    expect(await withSpan('work', {}, async (span) => span)).toBeUndefined();
    expect(currentTraceparent()).toBeUndefined();
  });
});

describe('tracing on (in-memory exporter instead of OTLP)', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let fake: FakeModelServer;
  let t: TestApp;

  beforeAll(async () => {
    tracing = startTracing({ serviceName: 'workspace-ai-test', exporter })!;
    fake = await startFakeModelServer();
    t = await createTestApp({ ...fake.env, ...LIFTED_THROTTLES, THROTTLE_CHAT_MESSAGES: '10000/minute' });
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
    await tracing?.shutdown();
  });
  beforeEach(async () => {
    await truncateAll(t.database);
    fake.reset();
    exporter.reset();
  });

  const spans = () => exporter.getFinishedSpans();
  const inTrace = (traceId: string) => spans().filter((s) => s.spanContext().traceId === traceId);
  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

  it('a request that records an ingestion job: its SERVER span, its queries, and the job run in the same trace', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const document = await readyTextDocument(t, ws.id, owner, 'Traces link a request to the job it queued. '.repeat(10));

    const confirm = spans().find((s) => s.name === 'POST /api/workspaces/:ws/documents/:id/confirm-upload/');
    expect(confirm, spans().map((s) => s.name).join('\n')).toBeDefined();
    expect(confirm!.kind).toBe(SpanKind.SERVER);
    expect(confirm!.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/workspaces/:ws/documents/:id/confirm-upload/', 'http.response.status_code': 202 });
    const traceId = confirm!.spanContext().traceId;

    // Statements of the request, as children in its trace, with their text and no parameters.
    const queries = inTrace(traceId).filter((s) => s.attributes['db.system.name'] === 'postgresql');
    expect(queries.length).toBeGreaterThan(2);
    expect(queries.every((q) => q.kind === SpanKind.CLIENT)).toBe(true);
    const insertJob = queries.find((q) => String(q.attributes['db.query.text']).startsWith('insert into "background_jobs"'));
    expect(insertJob).toBeDefined();
    expect(String(insertJob!.attributes['db.query.text'])).toContain('$1');
    expect(String(insertJob!.attributes['db.query.text'])).not.toContain(document.id);

    // The job stored the request's span context, and its run is a child of it.
    const [job] = await t.deps.database.db.select().from(backgroundJobs).where(eq(backgroundJobs.name, 'documents.ingest'));
    expect(job!.traceParent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    const run = spans().find((s) => s.name === 'job documents.ingest');
    expect(run).toBeDefined();
    expect(run!.spanContext().traceId).toBe(traceId);
    expect(run!.kind).toBe(SpanKind.CONSUMER);
    expect(job!.traceParent!.split('-')[2]).toBe(parentOf(run!));
    // The job's own queries belong to its run span.
    expect(inTrace(traceId).some((s) => parentOf(s) === run!.spanContext().spanId && s.attributes['db.system.name'] === 'postgresql')).toBe(true);

    if (process.env.TEST_REDIS_URL) {
      // Distributed profile: the job went through BullMQ; its Redis commands are spans too.
      expect(spans().some((s) => s.attributes['db.system.name'] === 'redis')).toBe(true);
    }
  });

  it('continues the caller\'s trace from an incoming traceparent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await t.request('GET', '/healthz', { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    expect(res.statusCode).toBe(200);
    const server = spans().find((s) => s.name === 'GET /healthz');
    expect(server!.spanContext().traceId).toBe(traceId);
    expect(parentOf(server!)).toBe('00f067aa0ba902b7');
  });

  it('a streamed send makes a model-call span with the model and its token counts', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Traced reply', usage: { inputTokens: 13, outputTokens: 5 } });
    const { done } = await injectStream(t, `${w.base}stream/`, { content: 'Hello' }, w.alice);
    expect(done).toBeDefined();
    const call = spans().find((s) => s.name === `chat ${w.chat.ai_model}`);
    expect(call).toBeDefined();
    expect(call!.kind).toBe(SpanKind.CLIENT);
    expect(call!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': w.chat.ai_model,
      'gen_ai.provider.name': t.deps.catalog.chatModel(w.chat.ai_model)!.provider,
      'gen_ai.usage.input_tokens': 13,
      'gen_ai.usage.output_tokens': 5,
    });
    const request = spans().find((s) => s.name === 'POST /api/workspaces/:ws/chats/:session/messages/stream/');
    expect(call!.spanContext().traceId).toBe(request!.spanContext().traceId);
  });
});
