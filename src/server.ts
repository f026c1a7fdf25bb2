import { buildApp } from './app.js';
import { loadConfig } from './config/env.js';
import { resolveSecretKey } from './config/secret-key.js';
import { createDeps } from './deps.js';
import { createLogger } from './platform/logger.js';
import { onShutdownSignal } from './platform/shutdown.js';

const config = resolveSecretKey(loadConfig());
const log = createLogger(config.LOG_LEVEL);
const deps = await createDeps(config, log);
const app = await buildApp(deps);

await app.listen({ port: config.PORT, host: config.HOST });
// Embedded profile (or RUN_WORKER_IN_PROCESS=true): this process also runs the background jobs.
if (config.runWorkerInProcess) {
  await deps.queue.startWorker();
  // In-process jobs do not survive a restart: queue again what was left unfinished.
  const recovered = await deps.services.ingestion.recover();
  if (recovered) log.info({ recovered }, 're-queued unfinished ingestion tasks');
}
log.info(
  {
    database: deps.database.kind,
    queue: deps.queue.kind,
    worker: config.runWorkerInProcess ? 'in-process' : 'separate',
    storage: deps.storage.kind,
    docs: `${config.publicBaseUrl}/api/docs/`,
  },
  'service started',
);

onShutdownSignal(log, config.SHUTDOWN_GRACE_SECONDS, async () => {
  // Stop accepting requests and wait for the ones in flight (open streams included).
  await app.close();
  // Replies whose client went away are still being generated: let them finish and be saved.
  await deps.services.streams.drain();
  // Closes the queue first: running jobs finish, waiting ones stay queued (in Redis) or are dropped (in-process).
  await deps.close();
});
