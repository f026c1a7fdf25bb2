#!/usr/bin/env node
// Builds dist/ (tsc, then the bundle `npm start` and `npm run worker` run: scripts/bundle.mjs)
// only when it is missing or older than the sources, under a lock, so that
// `npm start`, `npm run worker` and `npm run migrate` start at once when nothing changed and an API
// process and a worker started together never compile into dist/ at the same time (the second
// waits, then finds dist/ fresh). Plain Node on purpose: it must run where dev dependencies
// (tsx, TypeScript) were pruned, and there it only checks.
//
//   node scripts/ensure-build.mjs           build if needed (npm start / worker / migrate)
//   node scripts/ensure-build.mjs --force   always build (npm run build)
//
// dist/ is fresh when dist/.build-stamp.json exists, names the same set of source files, and no
// source was modified after the build it records began (or after the newest source it saw).
// Messages go to stderr, prefixed.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { installedVersion } from './installed-version.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = path.join(ROOT, 'dist');
const STAMP = path.join(DIST, '.build-stamp.json');
const LOCK = path.join(ROOT, '.build.lock');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const BUNDLE = path.join(ROOT, 'scripts', 'bundle.mjs');
/** Written by scripts/bundle.mjs: the bundle's files and the package versions it holds. */
const BUNDLE_MANIFEST = path.join(DIST, 'bundle', 'build.json');
/** Files outside src/ that change what the build emits (src/**, minus tests, is walked). */
const ROOT_SOURCES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'drizzle.config.ts', 'scripts/bundle.mjs', 'scripts/installed-version.mjs'];
/** A lock held longer than this by a process we cannot check (another host) is presumed abandoned. */
const LOCK_STALE_MS = 10 * 60_000;
const LOCK_WAIT_MS = Number(process.env.ENSURE_BUILD_LOCK_WAIT_MS ?? 15 * 60_000);
const POLL_MS = 200;

const say = (message) => process.stderr.write(`ensure-build: ${message}\n`);

/** Every source file (relative path) with its mtime; tests are excluded like tsconfig.build.json does. */
function listSources() {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && !entry.name.endsWith('.test.ts')) files.push(full);
    }
  };
  const src = path.join(ROOT, 'src');
  if (existsSync(src)) walk(src);
  for (const name of ROOT_SOURCES) {
    const full = path.join(ROOT, name);
    if (existsSync(full)) files.push(full);
  }
  return files.map((full) => ({ file: path.relative(ROOT, full), mtimeMs: statSync(full).mtimeMs })).sort((a, b) => (a.file < b.file ? -1 : 1));
}

const hashOf = (sources) =>
  createHash('sha256')
    .update(sources.map((s) => s.file).join('\n'))
    .digest('hex');

function readStamp() {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The bundle's manifest (scripts/bundle.mjs), or undefined when there is none. */
function readBundleManifest() {
  try {
    return JSON.parse(readFileSync(BUNDLE_MANIFEST, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * A package the bundle holds whose installed version differs from the one bundled (an `npm ci`
 * after a lock file change): the bundle still has the old code, so dist/ must be built again.
 */
function changedBundledPackage(manifest) {
  for (const [dir, version] of Object.entries(manifest.packages ?? {})) {
    const installed = installedVersion(ROOT, dir);
    if (installed !== version) return `${dir} is ${installed === undefined ? 'no longer installed' : `now ${installed}`} (bundled: ${version})`;
  }
  return undefined;
}

/** Why dist/ must be built, or undefined when it is fresh. */
function staleReason() {
  const stamp = readStamp();
  if (!stamp) return existsSync(DIST) ? 'dist/ has no build stamp' : 'dist/ is missing';
  // A shipped dist/ without its sources (a copied artifact) is used as it is.
  if (!existsSync(path.join(ROOT, 'src'))) return undefined;
  const manifest = readBundleManifest();
  if (!manifest) return 'dist/bundle/ is missing';
  const sources = listSources();
  if (hashOf(sources) !== stamp.sourcesHash) return 'source files were added or removed';
  // A source dated in the future (clock skew) would otherwise look changed at every start.
  const builtFrom = Math.max(stamp.startedAtMs, stamp.newestSourceMtimeMs ?? 0);
  const newer = sources.find((s) => s.mtimeMs > builtFrom);
  return newer ? `${newer.file} changed` : changedBundledPackage(manifest);
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Takes the lock (a file created exclusively); waits while a live process holds it. */
async function acquireLock() {
  const deadline = Date.now() + LOCK_WAIT_MS;
  let announced = false;
  for (;;) {
    try {
      writeFileSync(LOCK, JSON.stringify({ pid: process.pid, host: hostname(), since: Date.now() }), { flag: 'wx' });
      return;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    let holder;
    try {
      holder = JSON.parse(readFileSync(LOCK, 'utf8'));
    } catch {
      holder = undefined; // being written or just removed: look again
    }
    if (holder) {
      const abandoned = holder.host === hostname() ? !pidAlive(holder.pid) : Date.now() - holder.since > LOCK_STALE_MS;
      if (abandoned) {
        say(`removing an abandoned lock of pid ${holder.pid} (${path.relative(ROOT, LOCK)})`);
        rmSync(LOCK, { force: true });
        continue;
      }
      if (!announced) {
        say(`waiting for the build of pid ${holder.pid} to finish`);
        announced = true;
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`gave up waiting for ${LOCK} after ${LOCK_WAIT_MS / 1000} s; if no build is running, delete it`);
    }
    await sleep(POLL_MS);
  }
}

const releaseLock = () => rmSync(LOCK, { force: true });

/** Runs one build step (a Node script with its arguments); resolves with its exit code. */
function runStep(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
    // A stop signal while compiling (Ctrl-C, docker stop) ends tsc too, and the lock is released.
    const stop = (signal) => {
      child.kill(signal);
      releaseLock();
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

async function main() {
  const force = process.argv.includes('--force');
  let reason = force ? 'forced (npm run build)' : staleReason();
  if (!reason) {
    say(`dist/ is up to date (built ${new Date(readStamp().startedAtMs).toISOString()})`);
    return 0;
  }
  if (!existsSync(TSC)) {
    say(`cannot build: ${reason}, and TypeScript is not installed (dev dependencies were omitted).`);
    say('Build before leaving dev dependencies out: `npm ci --include=dev && npm run build && npm prune --omit=dev`,');
    say('or install them again with `npm ci --include=dev`.');
    return 1;
  }
  await acquireLock();
  try {
    // Whoever held the lock may just have built what we need.
    if (!force) reason = staleReason();
    if (!reason) {
      say('dist/ is up to date (built by another process meanwhile)');
      return 0;
    }
    say(`building dist/ with tsc: ${reason}`);
    const startedAtMs = Date.now();
    const sources = listSources();
    rmSync(STAMP, { force: true }); // a failed or interrupted build leaves no stamp behind
    const code = await runStep([TSC, '-p', 'tsconfig.build.json']);
    if (code !== 0) {
      say(`tsc failed (exit ${code}); dist/ is not usable`);
      return code;
    }
    const bundled = await runStep([BUNDLE]);
    if (bundled !== 0 || !readBundleManifest()) {
      say(`bundling failed (exit ${bundled}${bundled === 0 ? ', no dist/bundle/build.json' : ''}); dist/ is not usable`);
      return bundled || 1;
    }
    writeFileSync(STAMP, JSON.stringify({
        startedAtMs,
        newestSourceMtimeMs: Math.max(...sources.map((s) => s.mtimeMs)),
        sourcesHash: hashOf(sources),
        files: sources.length,
      }) + '\n');
    say(`built dist/ in ${((Date.now() - startedAtMs) / 1000).toFixed(1)} s`);
    return 0;
  } finally {
    releaseLock();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    say(error.message);
    process.exit(1);
  },
);
