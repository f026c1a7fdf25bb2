import module from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import v8 from 'node:v8';
import { loadConfig } from './config/env.js';
import { resolveSecretKey } from './config/secret-key.js';
import { openServiceDatabase } from './db/open.js';
import { createLogger } from './platform/logger.js';
import { onShutdownSignal } from './platform/shutdown.js';
import { startTracing } from './platform/tracing.js';
import { LISTEN_BACKLOG } from './platform/listen.js';

/** How long after it listens the service starts its background work (see below). */
const BACKGROUND_START_DELAY_MS = 250;
/** V8 13.6's default (`node --v8-options` on Node 24); V8 11.3, Node 20's, has 1,800,000. */
const WASM_TIERING_BUDGET = 13_000_000;

// Node ≥ 22.1 (the Docker image's 24): the compiled code of the modules imported below is kept on
// disk (os.tmpdir()/node-compile-cache) and reused by the next start (~70 ms of it, bench:start).
// Node 20 has no such cache: nothing happens there.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// The embedded database is PostgreSQL compiled to WebAssembly (PGlite). V8 compiles a WebAssembly
// function with its optimising compiler, on background threads, once the function has run for a
// "tiering budget". Opening the database runs much of postgres at once, and with V8 11's budget
// (Node 20; Node 22 has V8 12) those compiles took the CPU the main thread needed: ~0.3 s of a
// start on 2 cores (bench:start). V8 13 (Node 24) has 13,000,000 by default, which this sets on
// older V8s; hot functions still tier up, a little later. Set before PGlite instantiates its module.
if (Number(process.versions.v8.split('.')[0]) < 13) v8.setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);

const config = resolveSecretKey(loadConfig());
const log = createLogger(config.LOG_LEVEL);
// Before anything opens a connection, so the first queries are traced too (off when unset).
const tracing = startTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: config.OTEL_SERVICE_NAME });
// Opening (PGlite: starting its WASM instance) and migrating the database is the slowest step of
// start-up: begun first, it runs while the services and routes below are loaded. createDeps
// awaits it (and reports its failure); the empty handler only keeps it from counting as unhandled
// meanwhile.
// The embedded database can stop for good (PostgreSQL's PANIC, e.g. its log could not grow on a
// full disk): every statement would fail from then on, so the process shuts down with status 1
// for its supervisor to start it again once the cause is fixed (a disk still full fails that
// start, saying so). Only the error's code and message are logged.
// eslint-disable-next-line prefer-const -- set once the service can shut down; read if the database stops before
let stopService: ((reason: string, exitCode: number) => void) | undefined;
function databaseStopped(error: Error) {
  const { code, severity } = error as Error & { code?: unknown; severity?: unknown };
  log.fatal({ fault: { code, severity, message: error.message.slice(0, 300) } }, 'the embedded database stopped; shutting down');
  if (stopService) stopService('embedded database stopped', 1);
  else process.exit(1);
}
const opening = openServiceDatabase(config, { onStopped: databaseStopped });
opening.catch(() => undefined);
const [{ createDeps }, { buildApp }, { serveMetrics }] = await Promise.all([
  import('./deps.js'),
  import('./app.js'),
  import('./platform/metrics.js'),
]);
const deps = await createDeps(config, log, {}, opening);
const app = await buildApp(deps);

// Before listening: the port accepts connections (and a supervisor may stop the process) from the
// moment it listens, and a stop signal must never meet the default handler, which kills at once.
// eslint-disable-next-line prefer-const -- read by the stop handler, which must exist before it is set
let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | undefined;
let stopping = false;
stopService = onShutdownSignal(log, config.SHUTDOWN_GRACE_SECONDS, async () => {
  stopping = true;
  // Stop accepting requests and wait for the ones in flight (open streams included).
  await app.close();
  metricsServer?.close();
  // Replies whose client went away are still being generated: let them finish and be saved.
  await deps.services.streams.drain();
  // Closes the queue first: running jobs finish; waiting ones stay recorded in the database.
  await deps.close();
  await tracing?.shutdown();
});

await app.listen({ port: config.PORT, host: config.HOST, backlog: LISTEN_BACKLOG });
// A separate /metrics listener (loopback by default), for scrapers that should not reach the API port.
metricsServer =
  config.METRICS_PORT !== undefined
    ? await serveMetrics(deps.metrics, config.METRICS_PORT, config.METRICS_HOST, config.METRICS_TOKEN)
    : undefined;

// Background work starts just after the service has begun answering: on the embedded profile its
// queries (the job reconciler's, the embedding generations') run on this thread, one at a time,
// and held back the first health checks by ~70 ms, past the 1 s start target (bench:start). A
// stop signal meanwhile is handled above; then nothing more starts.
await sleep(BACKGROUND_START_DELAY_MS);
if (!stopping) {
  try {
    // Embedded profile (or RUN_WORKER_IN_PROCESS=true): this process also runs the background
    // jobs, and its reconciler picks up at once what a previous run of it left unfinished.
    if (config.runWorkerInProcess) await deps.jobs.startWorker();
    else await deps.jobs.watchWorkers();
  } catch (error) {
    // A stop signal that came while the worker started closes what it was starting.
    if (!stopping) throw error;
  }
  // Embedding generations in line with EMBEDDING_MODEL (a changed model starts the background
  // re-embedding); not awaited: /healthz answers meanwhile, and a failure is retried on first use.
  deps.services.embeddings.ready().catch((error: unknown) => log.error({ err: error }, 'embedding generations could not be reconciled'));
  // The AI SDK and its providers, which the service no longer loads before it listens (~0.1 s of
  // a start): loaded now, so the first model call does not wait for them.
  import('./modules/models/index.js')
    .then(({ preloadModelSdks }) => preloadModelSdks())
    .catch((error: unknown) => log.warn({ err: error }, 'the AI SDK could not be loaded ahead; it loads at the first model call'));
  log.info(
    {
      database: deps.database.kind,
      queue: deps.queue.kind,
      worker: config.runWorkerInProcess ? 'in-process' : 'separate',
      storage: deps.storage.kind,
      docs: `${config.publicBaseUrl}/api/docs/`,
      metrics: metricsServer ? `${config.METRICS_HOST}:${config.METRICS_PORT}` : config.METRICS_TOKEN ? 'api port (token)' : 'off',
      tracing: tracing ? 'on' : 'off',
    },
    'service started',
  );
}
