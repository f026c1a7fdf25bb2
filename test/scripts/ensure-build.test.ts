import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/*
 * scripts/ensure-build.mjs on a tiny fake project: the real script, copied into a temporary
 * directory with a few sources and a fake `typescript/bin/tsc` that records each build (and takes
 * a moment, so that two concurrent runs really overlap) and writes dist/.
 */

const SCRIPT = fileURLToPath(new URL('../../scripts/ensure-build.mjs', import.meta.url));

const FAKE_TSC = `
const fs = require('node:fs');
fs.appendFileSync('builds.log', process.pid + '\\n');
const end = Date.now() + Number(process.env.FAKE_TSC_MS ?? 400);
while (Date.now() < end) {}
if (process.env.FAKE_TSC_EXIT) process.exit(Number(process.env.FAKE_TSC_EXIT));
fs.mkdirSync('dist/src', { recursive: true });
fs.writeFileSync('dist/src/server.js', 'built\\n');
`;

// The bundling step (scripts/bundle.mjs, after tsc): records itself and writes dist/bundle/.
const FAKE_BUNDLE = `
import fs from 'node:fs';
fs.appendFileSync('bundles.log', process.pid + '\\n');
if (process.env.FAKE_BUNDLE_EXIT) process.exit(Number(process.env.FAKE_BUNDLE_EXIT));
fs.mkdirSync('dist/bundle', { recursive: true });
fs.writeFileSync('dist/bundle/server.js', fs.readFileSync('dist/src/server.js'));
if (!process.env.FAKE_BUNDLE_NO_MANIFEST) {
  const bundledVersion = JSON.parse(fs.readFileSync('node_modules/bundled-dep/package.json', 'utf8')).version;
  fs.writeFileSync('dist/bundle/build.json', JSON.stringify({ files: ['server.js'], packages: { 'node_modules/bundled-dep': bundledVersion } }));
}
`;

interface Run {
  code: number | null;
  output: string;
}

let root: string;

function run(args: string[] = [], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(root, 'scripts', 'ensure-build.mjs'), ...args],
      { cwd: root, env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, output: stdout + stderr }),
    );
  });
}

const linesOf = (file: string) => (existsSync(path.join(root, file)) ? readFileSync(path.join(root, file), 'utf8').trim().split('\n').length : 0);
const builds = () => linesOf('builds.log');
const bundles = () => linesOf('bundles.log');

/** Sets a file's mtime `secondsFromNow` away (positive: later than any build so far). */
function touch(file: string, secondsFromNow = 5) {
  const when = new Date(Date.now() + secondsFromNow * 1000);
  utimesSync(path.join(root, file), when, when);
}

/** A build whose step fails (`env` makes the fake fail): exit `code`, says `message`, no stamp or lock left; the next run builds. */
async function expectFailedThenBuilt(env: Record<string, string>, code: number, message: string) {
  const failed = await run([], env);
  expect(failed.code).toBe(code);
  expect(failed.output).toContain(message);
  expect(existsSync(path.join(root, 'dist', '.build-stamp.json'))).toBe(false);
  expect(existsSync(path.join(root, '.build.lock'))).toBe(false);

  const retried = await run();
  expect(retried.code).toBe(0);
  expect(builds()).toBe(2);
}

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ensure-build-'));
  mkdirSync(path.join(root, 'scripts'));
  copyFileSync(SCRIPT, path.join(root, 'scripts', 'ensure-build.mjs'));
  copyFileSync(path.join(path.dirname(SCRIPT), 'installed-version.mjs'), path.join(root, 'scripts', 'installed-version.mjs'));
  writeFileSync(path.join(root, 'scripts', 'bundle.mjs'), FAKE_BUNDLE);
  mkdirSync(path.join(root, 'src', 'db'), { recursive: true });
  writeFileSync(path.join(root, 'src', 'server.ts'), 'export {};\n');
  writeFileSync(path.join(root, 'src', 'db', 'migrate-cli.ts'), 'export {};\n');
  writeFileSync(path.join(root, 'src', 'server.test.ts'), 'export {};\n');
  writeFileSync(path.join(root, 'package.json'), '{"name": "fake", "type": "module"}\n');
  writeFileSync(path.join(root, 'tsconfig.json'), '{}\n');
  writeFileSync(path.join(root, 'tsconfig.build.json'), '{}\n');
  // A package the fake bundle says it holds, at the version it bundled.
  mkdirSync(path.join(root, 'node_modules', 'bundled-dep'), { recursive: true });
  writeFileSync(path.join(root, 'node_modules', 'bundled-dep', 'package.json'), '{"name": "bundled-dep", "version": "1.0.0"}\n');
  mkdirSync(path.join(root, 'node_modules', 'typescript', 'bin'), { recursive: true });
  writeFileSync(path.join(root, 'node_modules', 'typescript', 'package.json'), '{"name": "typescript"}\n');
  writeFileSync(path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), FAKE_TSC);
  // Sources older than anything the tests build.
  for (const file of ['src/server.ts', 'src/db/migrate-cli.ts', 'src/server.test.ts', 'package.json', 'tsconfig.json', 'scripts/bundle.mjs']) touch(file, -60);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('scripts/ensure-build.mjs', () => {
  it('builds when dist/ is missing, then finds it up to date and does not build again', async () => {
    const first = await run();
    expect(first.code).toBe(0);
    expect(first.output).toContain('building dist/ with tsc: dist/ is missing');
    expect(builds()).toBe(1);
    expect(readFileSync(path.join(root, 'dist', 'src', 'server.js'), 'utf8')).toBe('built\n');
    // The bundle is made from tsc's output, after it.
    expect(bundles()).toBe(1);
    expect(readFileSync(path.join(root, 'dist', 'bundle', 'server.js'), 'utf8')).toBe('built\n');

    const second = await run();
    expect(second.code).toBe(0);
    expect(second.output).toContain('dist/ is up to date');
    expect(builds()).toBe(1);
    expect(existsSync(path.join(root, '.build.lock'))).toBe(false);
  });

  it('builds again after a source, package.json or a tsconfig changes, but not for a test file', async () => {
    await run();
    expect(builds()).toBe(1);

    touch('src/server.test.ts');
    expect((await run()).output).toContain('dist/ is up to date');
    expect(builds()).toBe(1);

    touch('src/db/migrate-cli.ts');
    expect((await run()).output).toContain(`building dist/ with tsc: ${path.join('src', 'db', 'migrate-cli.ts')} changed`);
    expect(builds()).toBe(2);

    touch('package.json', 10);
    expect((await run()).output).toContain('building dist/ with tsc: package.json changed');
    expect(builds()).toBe(3);

    touch('tsconfig.build.json', 15);
    expect((await run()).output).toContain('tsconfig.build.json changed');
    expect(builds()).toBe(4);

    touch('scripts/bundle.mjs', 20);
    expect((await run()).output).toContain(`${path.join('scripts', 'bundle.mjs')} changed`);
    expect(builds()).toBe(5);
    expect(bundles()).toBe(5);
  });

  it('builds again when a source file is added or removed, even with an old mtime', async () => {
    await run();
    writeFileSync(path.join(root, 'src', 'worker.ts'), 'export {};\n');
    touch('src/worker.ts', -60);
    expect((await run()).output).toContain('source files were added or removed');
    expect(builds()).toBe(2);

    rmSync(path.join(root, 'src', 'worker.ts'));
    expect((await run()).output).toContain('source files were added or removed');
    expect(builds()).toBe(3);
  });

  it('two runs started together build once: the second waits for the lock and finds dist/ fresh', async () => {
    const start = () =>
      new Promise<Run>((resolve) => {
        const child = spawn(process.execPath, [path.join(root, 'scripts', 'ensure-build.mjs')], {
          cwd: root,
          env: { PATH: process.env.PATH ?? '', FAKE_TSC_MS: '1500' },
        });
        let output = '';
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.on('exit', (code) => resolve({ code, output }));
      });
    const [api, worker] = await Promise.all([start(), start()]);

    expect(api.code).toBe(0);
    expect(worker.code).toBe(0);
    expect(builds()).toBe(1);
    const outputs = [api.output, worker.output];
    expect(outputs.filter((o) => o.includes('built dist/ in'))).toHaveLength(1);
    const waiter = outputs.find((o) => !o.includes('built dist/ in'))!;
    expect(waiter).toContain('waiting for the build of pid');
    expect(waiter).toContain('dist/ is up to date (built by another process meanwhile)');
    expect(existsSync(path.join(root, '.build.lock'))).toBe(false);
  });

  it('--force builds even when dist/ is fresh (npm run build)', async () => {
    await run();
    const forced = await run(['--force']);
    expect(forced.code).toBe(0);
    expect(forced.output).toContain('building dist/ with tsc: forced');
    expect(builds()).toBe(2);
  });

  it('without TypeScript (dev dependencies omitted): a fresh dist/ starts, a stale one fails saying what to run', async () => {
    await run();
    rmSync(path.join(root, 'node_modules', 'typescript'), { recursive: true });

    const fresh = await run();
    expect(fresh.code).toBe(0);
    expect(fresh.output).toContain('dist/ is up to date');

    touch('src/server.ts');
    const stale = await run();
    expect(stale.code).toBe(1);
    expect(stale.output).toContain('cannot build: src/server.ts changed, and TypeScript is not installed');
    expect(stale.output).toContain('npm ci --include=dev && npm run build && npm prune --omit=dev');
    expect(builds()).toBe(1);
  });

  it('a dist/ shipped without its sources is used as it is', async () => {
    await run();
    rmSync(path.join(root, 'src'), { recursive: true });
    rmSync(path.join(root, 'node_modules'), { recursive: true });
    const result = await run();
    expect(result.code).toBe(0);
    expect(result.output).toContain('dist/ is up to date');
  });

  it('a failed build exits non-zero, leaves no stamp, and the next run builds again', async () => {
    await expectFailedThenBuilt({ FAKE_TSC_EXIT: '2' }, 2, 'tsc failed (exit 2)');
  });

  it('builds again when a bundled package was installed at another version, or dist/bundle/ is gone', async () => {
    await run();
    writeFileSync(path.join(root, 'node_modules', 'bundled-dep', 'package.json'), '{"name": "bundled-dep", "version": "1.0.1"}\n');
    expect((await run()).output).toContain('building dist/ with tsc: node_modules/bundled-dep is now 1.0.1 (bundled: 1.0.0)');
    expect(builds()).toBe(2);

    rmSync(path.join(root, 'dist', 'bundle'), { recursive: true });
    expect((await run()).output).toContain('building dist/ with tsc: dist/bundle/ is missing');
    expect(builds()).toBe(3);
    expect((await run()).output).toContain('dist/ is up to date');
  });

  it('a bundle step that writes no manifest fails the build; the next run builds again', async () => {
    await expectFailedThenBuilt({ FAKE_BUNDLE_NO_MANIFEST: '1' }, 1, 'bundling failed (exit 0, no dist/bundle/build.json)');
  });

  it('a failed bundle exits non-zero, leaves no stamp, and the next run builds again', async () => {
    await expectFailedThenBuilt({ FAKE_BUNDLE_EXIT: '3' }, 3, 'bundling failed (exit 3)');
    expect(bundles()).toBe(2);
    expect((await run()).output).toContain('dist/ is up to date');
  });

  it('a lock left by a process that died is removed and the build goes ahead', async () => {
    // A pid that is certainly not running: a child that already exited.
    const dead = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.on('exit', () => resolve(child.pid!));
    });
    writeFileSync(path.join(root, '.build.lock'), JSON.stringify({ pid: dead, host: hostname(), since: Date.now() }));

    const result = await run();
    expect(result.code).toBe(0);
    expect(result.output).toContain(`removing an abandoned lock of pid ${dead}`);
    expect(builds()).toBe(1);
  });
});
