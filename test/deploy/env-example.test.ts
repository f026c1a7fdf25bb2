import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/env.js';

/* .env.example lists every setting of src/config/env.ts, and its uncommented values load. */

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('.env.example', () => {
  const example = read('.env.example');

  it('names every setting that src/config/env.ts reads', () => {
    const settings = [...read('src/config/env.ts').matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
    expect(settings.length).toBeGreaterThan(60);
    const missing = settings.filter((name) => !new RegExp(`^#? ?${name}=`, 'm').test(example));
    expect(missing).toEqual([]);
  });

  it('its set values are a valid configuration', () => {
    const values = Object.fromEntries(
      example
        .split('\n')
        .filter((line) => /^[A-Z][A-Z0-9_]*=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(values.SECRET_KEY).toBeDefined();
    expect(() => loadConfig(values)).not.toThrow();
  });
});
