import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/*
 * franc's trigram tables are loaded by ingestion on its first detection, not at start-up. Checked
 * in a child process (the test workers share their module cache, so another file may have loaded
 * franc already): a module-resolution hook writes down every franc module Node resolves.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const source = (file: string) => pathToFileURL(path.join(ROOT, file)).href;

const HOOKS = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.includes('/node_modules/franc/')) appendFileSync(process.env.FRANC_MARK, result.url + '\\n');
  return result;
}`;

const SCRIPT = `
import { register } from 'node:module';
import { readFileSync } from 'node:fs';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOKS)}));
const seen = () => readFileSync(process.env.FRANC_MARK, 'utf8');
await import(${JSON.stringify(source('src/app.ts'))});
await import(${JSON.stringify(source('src/deps.ts'))});
const { searchConfigFor, detectLanguage } = await import(${JSON.stringify(source('src/modules/documents/search-language.ts'))});
const atStart = seen();
const language = await detectLanguage('Die Rückerstattung für Jahresabonnements erfolgt innerhalb von dreißig Tagen.');
console.log(JSON.stringify({ atStart, config: searchConfigFor(language), language, after: seen() }));
`;

describe('language detection', () => {
  it('loads franc on the first detection, not when the app and its dependencies are imported', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'franc-lazy-'));
    try {
      const mark = path.join(dir, 'resolved.txt');
      writeFileSync(mark, '');
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', FRANC_MARK: mark },
        timeout: 60_000,
      });
      const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { atStart: string; config: string; language: string; after: string };
      expect(result.atStart).toBe('');
      expect({ language: result.language, config: result.config }).toEqual({ language: 'deu', config: 'german' });
      expect(result.after).toMatch(/node_modules\/franc\//);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
