import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Whether a `redis-server` binary is on PATH (the fault tests that need one skip without it). */
export const hasRedisServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * A private `redis-server` for tests that stop and start Redis: its own free port and temporary
 * directory, no persistence. Only this child process is ever stopped, never the machine's Redis.
 */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** SIGTERM (SIGKILL after 3 s), then waits until the port refuses connections. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: nothing is persisted) and waits until it answers. */
  start(): Promise<void>;
  /** SIGSTOP: connections stay open but nothing answers, as a hung server or a cut network. */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

export async function startRedisServer(): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wsai-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    if (child) return;
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', ''];
    const spawned = spawn('redis-server', args, { stdio: 'ignore' });
    child = spawned;
    // A test process that ends without close() (a hook timed out) must not leave it running.
    const orphanGuard = () => spawned.kill('SIGKILL');
    process.once('exit', orphanGuard);
    spawned.once('exit', () => {
      process.off('exit', orphanGuard);
      if (child === spawned) child = undefined;
    });
    const deadline = Date.now() + 10_000;
    while (!(await accepts(port))) {
      if (!child) throw new Error('redis-server exited at start');
      if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port}`);
      await sleep(20);
    }
  }

  async function stop(): Promise<void> {
    const running = child;
    if (running) {
      const exited = new Promise<void>((resolve) => {
        if (running.exitCode !== null || running.signalCode !== null) resolve();
        else running.once('exit', () => resolve());
      });
      running.kill('SIGTERM');
      const killer = setTimeout(() => running.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(killer);
      child = undefined;
    }
    const deadline = Date.now() + 10_000;
    while (await accepts(port)) {
      if (Date.now() > deadline) throw new Error(`port ${port} still accepts connections`);
      await sleep(20);
    }
  }

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    async close() {
      child?.kill('SIGCONT');
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A port nothing listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
