import { createRequire } from 'node:module';
import {
  type Attributes,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
} from '@opentelemetry/api';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type * as SdkTraceNode from '@opentelemetry/sdk-trace-node';
import type { NodeTracerProvider, SpanExporter } from '@opentelemetry/sdk-trace-node';
import type * as SemanticConventions from '@opentelemetry/semantic-conventions';
import type { FastifyInstance } from 'fastify';

/**
 * OpenTelemetry tracing, on only when OTEL_EXPORTER_OTLP_ENDPOINT is set (or a test brings an
 * exporter). Off, nothing is registered: no provider, exporter, context manager or hook, and
 * every helper below is one boolean test away from calling the traced code directly, so no span
 * object is ever made. The OpenTelemetry API is process-global by design; so is this switch.
 */

const TRACER_NAME = 'workspace-ai-service';
let provider: NodeTracerProvider | undefined;

export interface TracingOptions {
  /** OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://otel-collector:4318 (spans go to <endpoint>/v1/traces). */
  endpoint?: string;
  /** OTEL_SERVICE_NAME */
  serviceName: string;
  /** Tests: an exporter of their own (InMemorySpanExporter), spans exported at once. */
  exporter?: SpanExporter;
}

export interface Tracing {
  /** Flushes what is buffered and unregisters everything (shutdown, end of a test). */
  shutdown(): Promise<void>;
}

/**
 * The SDK (provider, processors, OTLP exporter: a few hundred files) is loaded only when tracing
 * starts, so a process without OTEL_EXPORTER_OTLP_ENDPOINT never loads it. `require` keeps
 * `startTracing` synchronous; the API it registers with is process-global, whichever build loads it.
 */
const requireSdk = createRequire(import.meta.url);

/** Registers the tracer provider when an endpoint (or exporter) is given; otherwise does nothing. */
export function startTracing(options: TracingOptions): Tracing | undefined {
  if (!options.endpoint && !options.exporter) return undefined;
  if (provider) throw new Error('tracing is already started in this process');
  const { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor } = requireSdk('@opentelemetry/sdk-trace-node') as typeof SdkTraceNode;
  const { resourceFromAttributes } = requireSdk('@opentelemetry/resources') as typeof Resources;
  const { ATTR_SERVICE_NAME } = requireSdk('@opentelemetry/semantic-conventions') as typeof SemanticConventions;
  const otlp = () => requireSdk('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  const processor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : new BatchSpanProcessor(new (otlp().OTLPTraceExporter)({ url: `${options.endpoint!.replace(/\/+$/, '')}/v1/traces` }));
  const started = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName }),
    spanProcessors: [processor],
  });
  // Global tracer provider, AsyncLocalStorage context manager and the W3C trace-context propagator.
  started.register();
  provider = started;
  return {
    async shutdown() {
      if (provider !== started) return;
      provider = undefined;
      await started.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

export function tracingEnabled(): boolean {
  return provider !== undefined;
}

const tracer = () => trace.getTracer(TRACER_NAME);

/**
 * Runs `work` inside a new span (the current one's child), ended when `work` settles; an error
 * marks it failed. With tracing off this is `work()` and nothing else.
 */
export function withSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!provider) return work(undefined);
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : undefined });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Starts a CLIENT span, child of the current one, for work that ends in a callback rather than
 * an awaited function (Redis commands); returns its end, or undefined when tracing is off.
 */
export function startClientSpan(name: string, attributes: Attributes): ((error?: unknown) => void) | undefined {
  if (!provider) return undefined;
  const span = tracer().startSpan(name, { kind: SpanKind.CLIENT, attributes });
  return (error) => {
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : undefined });
    span.end();
  };
}

/** The current span context as a W3C `traceparent`, to store with a job; undefined when off or outside a span. */
export function currentTraceparent(): string | undefined {
  if (!provider) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a stored or received `traceparent` names (the root context when absent or malformed). */
export function contextFromTraceparent(traceparent: string | undefined): Context {
  return propagation.extract(context.active(), traceparent ? { traceparent } : {});
}

/**
 * One SERVER span per request: `METHOD /route/pattern`, its status, and the caller's trace when
 * it sends `traceparent`. Everything the request does (queries, model calls, jobs it records)
 * runs inside it. The span ends when the response closes, so streamed replies are timed whole.
 */
export function registerRequestTracing(app: FastifyInstance): void {
  if (!provider) return;
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const parent = propagation.extract(context.active(), request.headers);
    const span = tracer().startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route } },
      parent,
    );
    reply.raw.once('close', () => {
      const status = reply.raw.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), done);
  });
}
