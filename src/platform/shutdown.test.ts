import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * onShutdownSignal's exits, in a real process (test/support/shutdown-child.ts): a signal drains
 * and exits 0; a shutdown from inside (server.ts, when its database stops) drains and exits 1,
 * and a signal arriving meanwhile lets that drain finish; a second signal exits at once.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function run(mode: 'wait' | 'stop', signals: NodeJS.Signals[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/shutdown-child.ts', mode], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (data: Buffer) => {
    const first = !output.includes('ready');
    output += data.toString();
    if (first && output.includes('ready')) for (const signal of signals) child.kill(signal);
  });
  child.stderr.on('data', (data: Buffer) => (output += data.toString()));
  return new Promise<{ code: number | null; messages: string[] }>((resolve) =>
    child.on('exit', (code) =>
      resolve({
        code,
        messages: output
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => (JSON.parse(line) as { msg: string }).msg),
      }),
    ),
  );
}

describe('onShutdownSignal', () => {
  it('a signal drains and exits 0', async () => {
    expect(await run('wait', ['SIGTERM'])).toEqual({ code: 0, messages: ['shutting down', 'draining', 'drained', 'shutdown complete'] });
  });

  it('a shutdown from inside drains and exits 1, and a signal meanwhile does not cut the drain short', async () => {
    expect(await run('stop', [])).toEqual({ code: 1, messages: ['shutting down', 'draining', 'drained', 'shutdown complete'] });
    expect(await run('stop', ['SIGTERM'])).toEqual({ code: 1, messages: ['shutting down', 'draining', 'drained', 'shutdown complete'] });
  });

  it('a second signal exits at once with 1', async () => {
    const result = await run('wait', ['SIGTERM', 'SIGINT']);
    expect(result.code).toBe(1);
    expect(result.messages).toEqual(['shutting down', 'draining', 'second signal: exiting now']);
  });
});
