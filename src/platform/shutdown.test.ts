import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * onShutdownSignal's exits, in a real process (test/support/shutdown-child.ts): a signal drains
 * and exits 0; a shutdown from inside (server.ts, when its database stops) drains and exits 1,
 * and a signal arriving meanwhile lets that drain finish; a second signal exits at once.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Runs the child; `first` is sent once it is ready, `second` once it is draining. */
function run(mode: 'wait' | 'stop', first?: NodeJS.Signals, second?: NodeJS.Signals) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/shutdown-child.ts', mode], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const pending = [
    { after: 'ready', signal: first },
    { after: '"draining"', signal: second },
  ];
  child.stdout.on('data', (data: Buffer) => {
    output += data.toString();
    while (pending[0] && output.includes(pending[0].after)) {
      const { signal } = pending.shift()!;
      if (signal) child.kill(signal);
    }
  });
  child.stderr.on('data', (data: Buffer) => (output += data.toString()));
  return new Promise<{ code: number | null; messages: string[] }>((resolve) =>
    child.on('exit', (code) =>
      resolve({
        code,
        // Sorted: pino's buffered lines may reach the pipe out of order when the process exits.
        messages: output
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => (JSON.parse(line) as { msg: string }).msg)
          .sort(),
      }),
    ),
  );
}

/** The messages of a shutdown that drained, sorted. */
const DRAINED = ['drained', 'draining', 'shutdown complete', 'shutting down'];

describe('onShutdownSignal', () => {
  it('a signal drains and exits 0', async () => {
    expect(await run('wait', 'SIGTERM')).toEqual({ code: 0, messages: [...DRAINED] });
  });

  it('a shutdown from inside drains and exits 1, and a signal meanwhile does not cut the drain short', async () => {
    expect(await run('stop')).toEqual({ code: 1, messages: [...DRAINED] });
    expect(await run('stop', 'SIGTERM')).toEqual({ code: 1, messages: [...DRAINED] });
  });

  it('a second signal exits at once with 1', async () => {
    const result = await run('wait', 'SIGTERM', 'SIGINT');
    expect(result.code).toBe(1);
    expect(result.messages).toEqual(['draining', 'second signal: exiting now', 'shutting down']);
  });
});
