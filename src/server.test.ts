import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_SECRET_KEY } from '../test/support/app.js';
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

/** The kernel's cap on a listen backlog (Linux), or 0 where it cannot be read. */
function somaxconn(): number {
  try {
    return Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim());
  } catch {
    return 0;
  }
}

const BURST = 1000;

/** The real server on the embedded profile, on a free port with a fresh DATA_DIR; `remove` deletes it after the stop. */
async function startEmbeddedServer(name: string) {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), `wsai-${name}-`));
  const server = spawnService('server', { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, SECRET_KEY: TEST_SECRET_KEY });
  return { port, server, remove: () => rmSync(dataDir, { recursive: true, force: true }) };
}

describe('the server process starting up (embedded profile)', () => {
  it('a stop signal as soon as it listens ends it gracefully, and nothing starts after the stop', { timeout: 90_000 }, async () => {
    const { port, server, remove } = await startEmbeddedServer('start-stop');
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
      remove();
    }
  });

  // The kernel completes connections into the listen queue while the process does not accept
  // them: a stopped process shows how many a burst can queue before SYNs are dropped (each
  // dropped client retries after a second). Node's default backlog queues 512.
  it.skipIf(somaxconn() < 1024)(`queues a burst of ${BURST} connections while its event loop is busy (listen backlog)`, { timeout: 90_000 }, async () => {
    const { port, server, remove } = await startEmbeddedServer('backlog');
    const sockets: Socket[] = [];
    // A stopped process ignores SIGTERM: should this test runner die first, it must not stay stopped.
    const killServer = () => server.child.kill('SIGKILL');
    process.once('exit', killServer);
    try {
      await server.ready;
      server.child.kill('SIGSTOP');
      let connected = 0;
      for (let i = 0; i < BURST; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.once('connect', () => (connected += 1));
        sockets.push(socket);
      }
      // Queued connections complete at once (the kernel answers); dropped ones wait a second for their retry.
      const deadline = performance.now() + 900;
      while (connected < BURST && performance.now() < deadline) await sleep(10);
      expect(connected).toBe(BURST);
    } finally {
      for (const socket of sockets) socket.destroy();
      server.child.kill('SIGCONT');
      process.off('exit', killServer);
      await server.stop();
      remove();
    }
  });
});
