import type { Logger } from 'pino';

/**
 * Runs `shutdown` once on SIGTERM or SIGINT and exits; if it takes longer than the grace period
 * the process exits anyway with status 1. A second signal exits at once. Returns a function that
 * starts the same shutdown from inside the process (a dependency that stopped for good), ending
 * with `exitCode` however the shutdown went.
 */
export function onShutdownSignal(log: Logger, graceSeconds: number, shutdown: () => Promise<void>): (reason: string, exitCode: number) => void {
  let stopping = false;
  let signals = 0;
  let finalCode = 0;
  const begin = (fields: Record<string, unknown>, exitCode: number | undefined) => {
    finalCode = Math.max(finalCode, exitCode ?? 0);
    // A second signal exits at once; a first one while a shutdown from inside is under way waits for it.
    if (exitCode === undefined && ++signals > 1) {
      log.warn(fields, 'second signal: exiting now');
      process.exit(1);
    }
    if (stopping) return;
    stopping = true;
    log.info({ ...fields, graceSeconds }, 'shutting down');
    const timer = setTimeout(() => {
      log.error('shutdown grace period elapsed: exiting');
      process.exit(1);
    }, graceSeconds * 1000);
    timer.unref();
    shutdown().then(
      () => {
        log.info('shutdown complete');
        process.exit(finalCode);
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  const handle = (signal: NodeJS.Signals) => begin({ signal }, undefined);
  process.once('SIGTERM', handle);
  process.once('SIGINT', handle);
  return (reason, exitCode) => begin({ reason }, exitCode);
}
