import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from './app.js';
import { loadConfig } from './config/env.js';
import { createDeps } from './deps.js';
import { createLogger } from './platform/logger.js';

/**
 * `npm run lint:api` (first half): writes the OpenAPI document of the real app, built on the
 * embedded profile (PGlite and local storage in a throw-away DATA_DIR), to the file named by the
 * first argument (default dist/openapi.json). The document does not depend on the data, only on
 * the routes and their documentation.
 */
const target = path.resolve(process.argv[2] ?? 'dist/openapi.json');
const dataDir = mkdtempSync(path.join(tmpdir(), 'wsai-openapi-'));
const config = loadConfig({
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  SECRET_KEY: 'openapi-document-only-0123456789-abcdefghijklmnop',
  // A placeholder host (RFC 2606): the served document names the deployment's PUBLIC_BASE_URL.
  PUBLIC_BASE_URL: process.env.PUBLIC_BASE_URL ?? 'https://workspace-ai.invalid',
});
const deps = await createDeps(config, createLogger(config.LOG_LEVEL));
try {
  const app = await buildApp(deps);
  await app.ready();
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, `${JSON.stringify(app.swagger(), null, 2)}\n`);
  await app.close();
} finally {
  await deps.close();
  rmSync(dataDir, { recursive: true, force: true });
}
process.stdout.write(`OpenAPI document written to ${path.relative(process.cwd(), target)}\n`);
