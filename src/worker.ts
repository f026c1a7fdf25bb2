import { loadConfig } from './config/env.js';
import { resolveSecretKey } from './config/secret-key.js';
import { createDeps } from './deps.js';
import { createLogger } from './platform/logger.js';
import { serveMetrics } from './platform/metrics.js';
import { onShutdownSignal } from './platform/shutdown.js';
import { startTracing } from './platform/tracing.js';

/** A job worker only (distributed profile): `npm run worker`, as many processes as needed. */
const config = resolveSecretKey(loadConfig());
const log = createLogger(config.LOG_LEVEL);
const tracing = startTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: config.OTEL_SERVICE_NAME });
const deps = await createDeps(config, log);
if (deps.queue.kind === 'memory') {
  // Without Redis the queue lives inside each API process: a separate worker would never see a job.
  log.warn('REDIS_URL is not set: this worker only runs jobs enqueued in its own process');
}
const metricsServer =
  config.WORKER_METRICS_PORT !== undefined
    ? // The same registry families as the API; behind METRICS_TOKEN as well when it is set.
      await serveMetrics(deps.metrics, config.WORKER_METRICS_PORT, config.HOST, config.METRICS_TOKEN)
    : undefined;
// Starts the queue's worker, the heartbeat and the reconciler (which runs once at once).
await deps.jobs.startWorker();
log.info(
  { queue: deps.queue.kind, concurrency: config.WORKER_CONCURRENCY, worker: deps.jobs.workerId, metricsPort: config.WORKER_METRICS_PORT },
  'worker started',
);

// deps.close() closes the queue first, which waits for the running jobs to finish.
onShutdownSignal(log, config.SHUTDOWN_GRACE_SECONDS, async () => {
  metricsServer?.close();
  await deps.close();
  await tracing?.shutdown();
});
