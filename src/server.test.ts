import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnService } from '../test/support/processes.js';
import { freePort } from '../test/support/redis-server.js';
import { sleep } from '../test/support/wait.js';

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

describe('the server process starting up (embedded profile)', () => {
  it('a stop signal as soon as it listens ends it gracefully, and nothing starts after the stop', { timeout: 90_000 }, async () => {
    const port = await freePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'wsai-start-stop-'));
    const server = spawnService('server', { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, SECRET_KEY: 'test-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz' });
    try {
      // The moment the port accepts connections: background work (the in-process worker's
      // start-up reconciler) is about to start or starting, and the signal comes in between.
      while (!(await accepts(port))) {
        if (server.child.exitCode !== null) throw new Error(server.output());
        await sleep(2);
      }
      server.child.kill('SIGTERM');
      expect(await server.exited, server.output()).toBe(0);
      const messages = server.lines().map((line) => line.msg);
      expect(messages, server.output()).toContain('shutdown complete');
      const stoppedAt = messages.indexOf('shutting down');
      expect(stoppedAt).toBeGreaterThanOrEqual(0);
      expect(messages.slice(stoppedAt), server.output()).not.toContain('service started');
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
