import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** Issue 13's rule: no source file over 400 lines (tests excluded): a longer one does several jobs. */
const LIMIT = 400;
const root = path.resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

describe('source files', () => {
  it(`are at most ${LIMIT} lines each`, () => {
    const files = sources(root);
    expect(files.length).toBeGreaterThan(100);
    const long = files
      .map((file) => ({ file: path.relative(root, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > LIMIT);
    expect(long).toEqual([]);
  });
});
