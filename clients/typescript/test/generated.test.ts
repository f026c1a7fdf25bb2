import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSchemaSource, SCHEMA_FILE } from '../scripts/generate.js';

const dir = mkdtempSync(path.join(tmpdir(), 'wsai-sdk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the committed SDK types', () => {
  it('are what `npm run sdk:generate` makes from the current document (run it after changing the API)', async () => {
    // The document exactly as the generator's first half writes it (its own process: a throw-away app).
    const document = path.join(dir, 'openapi.json');
    await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/openapi-cli.ts', document], { cwd: process.cwd() });
    const fresh = await generateSchemaSource(JSON.parse(readFileSync(document, 'utf8')));
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    expect(committed === fresh, 'clients/typescript/src/schema.ts is stale: run `npm run sdk:generate` and commit it').toBe(true);
  }, 60_000);
});
