import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The service's own entry points (`src/server.ts`, `src/worker.ts`) as real child processes, for
 * tests that kill them with real signals. In the test suite they run bundled like `npm start`
 * (the bundle test/support/global-setup.ts makes, WSAI_TEST_BUNDLE_DIR); elsewhere (benchmarks,
 * another checkout given as `cwd`) with tsx like `npm run dev`. Output is kept (JSON log lines)
 * so a test can wait for a line and show the log when it fails.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Resolves when the process logged that it started ('service started' / 'worker started'). */
  readonly ready: Promise<void>;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Parsed JSON log lines so far. */
  lines(): Array<Record<string, unknown> & { msg?: string; level?: number }>;
  /** Resolves once a log line satisfies `match`. */
  waitFor(match: (line: Record<string, unknown> & { msg?: string }) => boolean, timeoutMs?: number): Promise<void>;
  /** Sends `signal` and resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  readonly exited: Promise<number | null>;
}

export function spawnService(
  entry: 'server' | 'worker',
  env: Record<string, string>,
  options: { readyTimeoutMs?: number; /** Another checkout of the service (benchmarks compare versions). */ cwd?: string } = {},
): ServiceProcess {
  const bundleDir = options.cwd === undefined ? process.env.WSAI_TEST_BUNDLE_DIR : undefined;
  const args = bundleDir ? [path.join(bundleDir, `${entry}.js`)] : ['--import', 'tsx', `src/${entry}.ts`];
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? ROOT,
    // Only what the service needs: nothing of the test runner's environment leaks in.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NODE_ENV: 'test', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (data: Buffer) => {
    output += data.toString('utf8');
    for (const listener of [...listeners]) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const lines = () =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown> & { msg?: string; level?: number }];
        } catch {
          return [];
        }
      });

  const waitFor: ServiceProcess['waitFor'] = (match, timeoutMs = 30_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (lines().some(match)) {
          finish();
          resolve();
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`${entry} (pid ${child.pid}) did not log the expected line within ${timeoutMs} ms:\n${output.slice(-4000)}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      void exited.then((code) => {
        if (!listeners.has(check)) return;
        finish();
        reject(new Error(`${entry} exited (${code}) before logging the expected line:\n${output.slice(-4000)}`));
      });
      listeners.add(check);
      check();
    });

  const startedMessage = entry === 'server' ? 'service started' : 'worker started';
  const ready = waitFor((line) => line.msg === startedMessage, options.readyTimeoutMs ?? 60_000);
  ready.catch(() => undefined);

  return {
    child,
    pid: child.pid!,
    ready,
    output: () => output,
    lines,
    waitFor,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/**
 * JSON calls to a service process at `base` (`http://127.0.0.1:PORT`) over real HTTP, with a
 * bearer token when given: the status, the content type and the body's text.
 */
export function httpCaller(base: string) {
  return async (method: string, url: string, body?: unknown, token?: string) => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
  };
}
