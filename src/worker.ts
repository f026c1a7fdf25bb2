import { loadConfig } from './config/env.js';
import { resolveSecretKey } from './config/secret-key.js';
import { createDeps } from './deps.js';
import { createLogger } from './platform/logger.js';
import { onShutdownSignal } from './platform/shutdown.js';

/** A job worker only (distributed profile): `npm run worker`, as many processes as needed. */
const config = resolveSecretKey(loadConfig());
const log = createLogger(config.LOG_LEVEL);
const deps = await createDeps(config, log);
if (deps.queue.kind === 'memory') {
  // Without Redis the queue lives inside each API process: a separate worker would never see a job.
  log.warn('REDIS_URL is not set: this worker only runs jobs enqueued in its own process');
}
await deps.queue.startWorker();
// Job ids are task ids, so re-queueing what BullMQ still holds is a no-op.
const recovered = await deps.services.ingestion.recover();
if (recovered) log.info({ recovered }, 'checked unfinished ingestion tasks');
log.info({ queue: deps.queue.kind, concurrency: config.WORKER_CONCURRENCY }, 'worker started');

// deps.close() closes the queue first, which waits for the running jobs to finish.
onShutdownSignal(log, config.SHUTDOWN_GRACE_SECONDS, () => deps.close());
