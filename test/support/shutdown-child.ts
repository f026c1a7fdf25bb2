/**
 * Run by src/platform/shutdown.test.ts as a child process: registers onShutdownSignal with a
 * shutdown that takes 300 ms, prints "ready", then, in mode `stop`, starts a shutdown from
 * inside with status 1 (as server.ts does when its database stops). The test sends the signals.
 */
import { pino } from 'pino';
import { onShutdownSignal } from '../../src/platform/shutdown.js';

const log = pino({ level: 'info' });
const stop = onShutdownSignal(log, 10, async () => {
  log.info('draining');
  await new Promise((resolve) => setTimeout(resolve, 300));
  log.info('drained');
});
setInterval(() => undefined, 1000);
process.stdout.write('ready\n');
if (process.argv[2] === 'stop') stop('dependency stopped', 1);
