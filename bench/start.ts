/**
 * Start-up benchmark (embedded profile): milliseconds from spawning `node <dist>/bundle/server.js`
 * (what `npm start` runs; `<dist>/src/server.js` for a build made before the bundle)
 * to the first 200 of `GET /healthz`, on an existing DATA_DIR (PGlite database already created
 * and migrated), next to a bare Node process that starts a Fastify server answering /healthz
 * (the floor: Node + Fastify + listen) measured in the same run.
 *
 *   npm run build && npm run bench:start [-- --runs 5 --dist dist --compare /tmp/prev/dist --no-record]
 *
 * `--compare DIR` also measures another build, e.g. the previous commit's (bench/README.md): a
 * `dist/` with node_modules/ and drizzle/ above it, so its imports and migrations resolve.
 * The targets take turns (floor, current, compared; then again), so load changes hit them alike.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { appendResults, ascending, fmt, loadAverage, machineLine, median, positiveInt } from './support.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: process.env.BENCH_RUNS ?? '5' },
    dist: { type: 'string', default: process.env.BENCH_DIST ?? 'dist' },
    compare: { type: 'string', default: process.env.BENCH_COMPARE },
    label: { type: 'string', default: process.env.BENCH_LABEL },
    'compare-label': { type: 'string', default: process.env.BENCH_COMPARE_LABEL },
    'no-record': { type: 'boolean', default: process.env.BENCH_NO_RECORD === '1' },
  },
});
const runs = positiveInt('runs', args.runs);
const say = (line: string) => process.stdout.write(`${line}\n`);
const POLL_MS = 10;
const GIVE_UP_MS = 60_000;

/** What `npm start` runs in that build: its bundle, or tsc's output in builds made before the bundle. */
const serverOf = (dist: string) => {
  const file = [path.resolve(ROOT, dist, 'bundle', 'server.js'), path.resolve(ROOT, dist, 'src', 'server.js')].find((candidate) => existsSync(candidate));
  if (!file) throw new Error(`neither ${dist}/bundle/server.js nor ${dist}/src/server.js exists: run \`npm run build\` first (or give --dist)`);
  return file;
};

/** A free TCP port on 127.0.0.1 (closed again at once; the child binds it). */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });

// The floor: what any Node + Fastify service pays before it can answer (import, listen).
const FLOOR = `
const Fastify = (await import('fastify')).default;
const app = Fastify();
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
`;

interface Target {
  label: string;
  argv: string[];
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Spawns the target and polls /healthz every POLL_MS; resolves with ms to the first 200. */
async function timeStart(target: Target, dataDir: string, secret: string): Promise<number> {
  const port = await freePort();
  const env = {
    ...process.env,
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    SECRET_KEY: secret,
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
  };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'STORAGE_BACKEND', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'METRICS_PORT']) delete (env as Record<string, string | undefined>)[name];
  const startedAt = performance.now();
  const child = spawn(process.execPath, target.argv, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${target.label} exited with ${child.exitCode} before answering:\n${stderr}`);
      if (performance.now() - startedAt > GIVE_UP_MS) throw new Error(`${target.label} did not answer /healthz within ${GIVE_UP_MS} ms:\n${stderr}`);
      try {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
        await response.arrayBuffer();
        if (response.status === 200) return performance.now() - startedAt;
      } catch {
        // Not listening yet.
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } finally {
    await stop(child);
  }
}

const loadAtStart = loadAverage();
const targets: Target[] = [{ label: 'floor: bare Fastify (`node -e`)', argv: ['--input-type=module', '-e', FLOOR] }];
/** This checkout's commit, for the default label of `--dist` (a build of the working tree). */
function headCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown commit';
  }
}
const relative = (file: string) => path.relative(ROOT, file);
const appServer = serverOf(args.dist);
targets.push({ label: `app: ${args.label ?? `${relative(appServer)}, ${headCommit()}`}`, argv: [appServer] });
if (args.compare) {
  const compared = serverOf(args.compare);
  targets.push({ label: `app: ${args['compare-label'] ?? compared}`, argv: [compared] });
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-start-'));
const secret = randomBytes(20).toString('hex'); // 40 characters
try {
  // The first start creates and migrates the database; it is not measured.
  const first = await timeStart(targets[1]!, dataDir, secret);
  say(`first start (creates DATA_DIR ${dataDir}): ${fmt(first)} ms`);
  const times = new Map<Target, number[]>(targets.map((t) => [t, []]));
  for (let run = 0; run < runs; run++) {
    for (const target of targets) {
      const ms = await timeStart(target, dataDir, secret);
      times.get(target)!.push(ms);
      say(`run ${run + 1} ${target.label}: ${fmt(ms)} ms`);
    }
  }
  const loadAtEnd = loadAverage();
  const floorMedian = median(ascending(times.get(targets[0]!)!));
  const table = [
    '| target | runs | min (ms) | median (ms) | max (ms) | median above the floor (ms) |',
    '|---|---:|---:|---:|---:|---:|',
    ...targets.map((target) => {
      const sorted = ascending(times.get(target)!);
      const above = target === targets[0] ? '' : fmt(median(sorted) - floorMedian);
      return `| ${target.label} | ${sorted.length} | ${fmt(sorted[0]!)} | ${fmt(median(sorted))} | ${fmt(sorted.at(-1)!)} | ${above} |`;
    }),
  ];
  const lines = [
    '`npm run bench:start` (see bench/README.md).',
    '',
    machineLine(),
    `- load average ${loadAtStart} at the start, ${loadAtEnd} at the end`,
    `- spawn \`node <dist>/bundle/server.js\` (or \`<dist>/src/server.js\`, per label) → first 200 of \`GET /healthz\` (polled every ${POLL_MS} ms), embedded profile (PGlite) on an existing DATA_DIR (created by one unmeasured start), LOG_LEVEL=warn; the targets take turns, ${runs} runs each`,
    '',
    ...table,
  ];
  say('');
  for (const line of table) say(line);
  if (!args['no-record']) appendResults('start-up to /healthz (embedded)', lines);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
