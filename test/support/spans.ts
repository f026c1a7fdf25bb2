import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll } from 'vitest';
import { startTracing } from '../../src/platform/tracing.js';

/**
 * Tracing on for the file, into memory: call it before the app is built (useTestApp and the
 * like), since request and SQL spans are installed when an app is built with tracing on.
 */
export function recordSpans(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  let tracing: ReturnType<typeof startTracing> | undefined;
  beforeAll(() => {
    tracing = startTracing({ serviceName: 'workspace-ai-test', exporter });
  });
  afterAll(async () => {
    await tracing?.shutdown();
  });
  return exporter;
}
