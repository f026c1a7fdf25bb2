import type { Logger } from 'pino';

/**
 * Runs `shutdown` once on SIGTERM or SIGINT and exits; if it takes longer than the grace period
 * the process exits anyway with status 1. A second signal exits at once.
 */
export function onShutdownSignal(log: Logger, graceSeconds: number, shutdown: () => Promise<void>): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, graceSeconds }, 'shutting down');
    const timer = setTimeout(() => {
      log.error('shutdown grace period elapsed: exiting');
      process.exit(1);
    }, graceSeconds * 1000);
    timer.unref();
    shutdown().then(
      () => {
        log.info('shutdown complete');
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', handle);
  process.once('SIGINT', handle);
}
