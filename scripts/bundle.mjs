// Bundles the service's two processes (API server, worker) with esbuild into one directory of ES
// modules: dist/bundle/server.js and dist/bundle/worker.js, which `npm start` and `npm run worker`
// run. Why: a start loads ~1,000 module files (~250 of ours, the rest from node_modules), and
// Node's ES module loader resolves, reads and links each one; in one bundle the embedded profile
// answers /healthz ~0.3 s (Node 20) to ~0.6 s (Node 24) sooner (bench:start, docs/decisions.md
// "Start"). The code is tsc's output (or the TypeScript sources, for the tests), unminified, so
// stack traces keep function names and the bundle names each source file in a comment.
//
// Packages listed in EXTERNAL_PACKAGES stay in node_modules and are imported from there, as
// before; see the list for why each. Every other package the entries import is bundled, and
// what the code imports only on demand (`import()`) lands in chunks loaded on demand.
//
// Plain Node on purpose (like ensure-build.mjs, which calls it after tsc); the test suite calls it
// too (test/support/global-setup.ts), so the processes the tests start run the same bundle.
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { installedVersion } from './installed-version.mjs';

/**
 * Packages never bundled, each for a reason:
 * - they read their own files at run time (PGlite's WebAssembly and data files, swagger-ui's
 *   static assets) or load native code (argon2, the optional msgpackr and pg natives);
 * - the OpenTelemetry SDK is required from node_modules only when tracing is on (tracing.ts), so
 *   its API stays there too: one copy of the API's registry;
 * - pino: the logger, kept as it is (its transports would load their own files);
 * - the rest is loaded only on demand (the distributed profile's drivers, S3, Stripe, mail,
 *   document parsing, tokenizer, language detection, undici): bundling them would not shorten a
 *   start. A package the code imports on demand (`import()`) and that is CommonJS must be listed:
 *   in a chunk of its own esbuild gives it only a default export, so `(await import(x)).name`
 *   would be undefined (the build fails instead, see dynamicImportsOfCommonJs).
 */
const EXTERNAL_PACKAGES = [
  '@electric-sql/pglite',
  '@electric-sql/pglite-pgvector',
  '@fastify/swagger-ui',
  '@node-rs/argon2',
  'msgpackr-extract',
  'pg-native',
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/resources',
  '@opentelemetry/semantic-conventions',
  '@opentelemetry/exporter-trace-otlp-http',
  'pino',
  'pg',
  'bullmq',
  'ioredis',
  '@aws-sdk/client-s3',
  '@aws-sdk/s3-request-presigner',
  'stripe',
  'nodemailer',
  'unpdf',
  'mammoth',
  'linkedom',
  'htmlparser2',
  '@mozilla/readability',
  'gpt-tokenizer',
  'franc',
  'undici',
];

/** The package name of a bare import (`@scope/name/sub` → `@scope/name`), else undefined. */
function packageOf(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Whether the module file at `file` is CommonJS (by its extension, else its package's "type"). */
function isCommonJs(file) {
  if (file.endsWith('.cjs')) return true;
  if (file.endsWith('.mjs')) return false;
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) return JSON.parse(readFileSync(manifest, 'utf8')).type !== 'module';
  }
  return true;
}

/** Top-level packages the lock file marks dev-only: not in a production install (`npm prune --omit=dev`). */
function devOnlyPackages(root) {
  try {
    const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
    return new Set(Object.entries(lock.packages ?? {}).filter(([dir, entry]) => entry.dev === true && /^node_modules\/(@[^/]+\/)?[^/]+$/.test(dir)).map(([dir]) => dir.slice('node_modules/'.length)));
  } catch {
    return new Set();
  }
}

/**
 * Marks the listed packages external where they resolve to their top-level copy: an external
 * import is resolved again at run time from the bundle's directory, that is from the top-level
 * node_modules, so a different copy nested under an importer (the AI SDK's own undici) is
 * bundled instead. A dev-only package stays external too: production code can reach one only
 * through an optional import (debug's `try { require('supports-color') }`), which must find it
 * missing in production as it did unbundled. Fails the build on an `import()` of a CommonJS
 * package that would be bundled.
 */
function externalPackages(root) {
  const external = new Set(EXTERNAL_PACKAGES);
  const devOnly = devOnlyPackages(root);
  return {
    name: 'external-packages',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        const name = packageOf(args.path);
        if (!name || args.pluginData === 'resolving') return undefined;
        const listed = external.has(name) || devOnly.has(name);
        if (!listed && args.kind !== 'dynamic-import') return undefined;
        const resolved = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'resolving' });
        // Not installed: a listed package stays an import (it fails at run time, as it did unbundled);
        // anything else is left to esbuild (an optional `import()` in a try block is only a warning).
        if (resolved.errors.length > 0) return listed ? { path: args.path, external: true } : undefined;
        // esbuild reports real paths: node_modules may be a link (a worktree sharing a checkout's).
        const topLevelDir = path.join(root, 'node_modules', name);
        const topLevel = existsSync(topLevelDir) && resolved.path.startsWith(realpathSync(topLevelDir) + path.sep);
        if (listed && topLevel) return { path: args.path, external: true };
        if (args.kind === 'dynamic-import' && !resolved.external && isCommonJs(resolved.path)) {
          return { errors: [{ text: `import('${args.path}') in ${args.importer} loads CommonJS that would be bundled: add ${name} to EXTERNAL_PACKAGES` }] };
        }
        return { path: resolved.path, external: resolved.external };
      });
    },
  };
}

/**
 * Bundles `entryPoints` (an object: output name → source file) into `outdir`. `root` is the
 * project's directory (its node_modules/ is where the externals are found). Resolves with
 * esbuild's result (with its metafile when asked); throws on any error.
 */
export async function bundleService({ root, entryPoints, outdir, metafile = false }) {
  const esbuild = await import('esbuild');
  return esbuild.build({
    absWorkingDir: root,
    entryPoints,
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    // CommonJS packages in the bundle call require() (Node's built-ins, the externals): ES modules
    // have none, so the bundle makes one.
    banner: { js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);" },
    plugins: [externalPackages(root)],
    metafile,
  });
}

/** The build's bundle (`node scripts/bundle.mjs`, run by ensure-build.mjs after tsc): dist/src → dist/bundle. */
const BUNDLE_ENTRIES = { server: 'dist/src/server.js', worker: 'dist/src/worker.js' };
/** What a build of dist/bundle/ wrote (its files) and which package versions it holds; read by ensure-build.mjs. */
const BUNDLE_MANIFEST = 'build.json';

/**
 * The packages the bundle holds (their directory under the project, as esbuild read them) with
 * their versions: ensure-build.mjs builds again when an install changes one (`npm ci` after a
 * lock file change), since their code is in dist/ now, not read from node_modules at start.
 */
function bundledPackages(metafile, root) {
  const packages = {};
  for (const input of Object.keys(metafile.inputs)) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input.split(path.sep).join('/'));
    if (match && packages[match[1]] === undefined) packages[match[1]] = installedVersion(root, match[1]) ?? '';
  }
  return packages;
}

/**
 * Builds dist/bundle/ in place. The chunks' names change with their content, so files of the
 * previous build are kept: a process started from it (still running while a new build is made,
 * before its restart) loads chunks on demand and must find them. Files of older builds go.
 */
async function buildDistBundle(root) {
  const outdir = path.join(root, 'dist', 'bundle');
  const manifestFile = path.join(outdir, BUNDLE_MANIFEST);
  let previous = [];
  try {
    previous = JSON.parse(readFileSync(manifestFile, 'utf8')).files ?? [];
  } catch {
    // First build, or an unreadable manifest: nothing to keep.
  }
  const result = await bundleService({ root, entryPoints: BUNDLE_ENTRIES, outdir, metafile: true });
  const files = Object.keys(result.metafile.outputs).map((file) => path.relative(outdir, path.resolve(root, file)));
  mkdirSync(outdir, { recursive: true });
  const keep = new Set([...files, ...previous, BUNDLE_MANIFEST]);
  for (const name of readdirSync(outdir)) if (!keep.has(name)) rmSync(path.join(outdir, name), { recursive: true, force: true });
  writeFileSync(manifestFile, `${JSON.stringify({ files, packages: bundledPackages(result.metafile, root) }, null, 2)}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  try {
    await buildDistBundle(root);
  } catch (error) {
    // esbuild has printed its own errors (error.errors); anything else is shown here.
    if (!Array.isArray(error?.errors)) process.stderr.write(`bundle: ${error?.stack ?? error}\n`);
    process.exit(1);
  }
}
