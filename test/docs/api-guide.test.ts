import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { useListeningChatApp } from '../support/listening-app.js';

/*
 * Runs every code sample of docs/api-guide.md, in order, against the real app listening on a
 * port (its PUBLIC_BASE_URL, so signed upload URLs reach it; replies from the fake model server).
 * A sample is a fenced ```sh or ```ts block right after `<!-- sample: NAME -->` (optionally with
 * `expect="TEXT"`: the sample's output must contain TEXT). Shell samples run with bash in one
 * working directory; the upper-case variables each one sets carry over to the next (and to the
 * TypeScript samples, as environment variables). TypeScript samples run with tsx, importing the
 * SDK from clients/typescript/src.
 */
const GUIDE = path.resolve('docs/api-guide.md');
const SDK_ENTRY = pathToFileURL(path.resolve('clients/typescript/src/index.ts')).href;
/** tsx's loader, by absolute URL: the samples run from a temporary directory. */
const TSX_LOADER = import.meta.resolve('tsx');

interface Sample {
  name: string;
  lang: 'sh' | 'ts';
  code: string;
  expect: string | undefined;
}

function extractSamples(markdown: string): Sample[] {
  const pattern = /<!-- sample: ([\w-]+)(?: expect="((?:[^"\\]|\\.)*)")? -->\n```(sh|ts)\n([\s\S]*?)\n```/g;
  return [...markdown.matchAll(pattern)].map(([, name, expectText, lang, code]) => ({
    name: name!,
    lang: lang as Sample['lang'],
    code: code!,
    expect: expectText?.replace(/\\(.)/g, '$1'),
  }));
}

const app = useListeningChatApp();
const { fake } = app;
const workDir = mkdtempSync(path.join(tmpdir(), 'wsai-guide-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** A reply slow enough to be stopped mid-way. */
const slowReply = () => ({ chunks: Array.from({ length: 30 }, (_, i) => `part${i + 1} `), delayMs: 100 });
/** What the model is told to do before a sample runs (by default it echoes the message). */
const before: Record<string, () => void> = {
  stop: () => fake.enqueue(slowReply()),
  'sdk-stop': () => fake.enqueue(slowReply()),
};

const STATE = '.guide-state';
/** Bash around a shell sample: loads the variables of the samples before it, saves its own after it. */
const shellScript = (code: string) => `set -euo pipefail
__BASELINE=" $(compgen -v | tr '\\n' ' ') "
if [ -f ${STATE}.sh ]; then source ${STATE}.sh; fi
${code}
__save() {
  for __v in $(compgen -v); do
    [[ $__v =~ ^[A-Z][A-Z0-9_]*$ ]] || continue
    case "$__BASELINE" in *" $__v "*) continue ;; esac
    declare -p "$__v" >&3
    printf '%s\\0%s\\0' "$__v" "\${!__v}" >&4
  done
}
__save 3>${STATE}.sh.new 4>${STATE}.env.new
mv ${STATE}.sh.new ${STATE}.sh
mv ${STATE}.env.new ${STATE}.env
`;

/** The variables the shell samples have set so far. */
function sampleState(): Record<string, string> {
  const file = path.join(workDir, `${STATE}.env`);
  if (!existsSync(file)) return {};
  const parts = readFileSync(file, 'utf8').split('\0');
  const state: Record<string, string> = {};
  for (let i = 0; i + 1 < parts.length; i += 2) state[parts[i]!] = parts[i + 1]!;
  return state;
}

function run(file: string, args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: workDir, env, timeout: 30_000, maxBuffer: 4 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

async function runSample(sample: Sample, env: Record<string, string>) {
  if (sample.lang === 'sh') return run('bash', ['-c', shellScript(sample.code)], env);
  const file = path.join(workDir, `${sample.name}.mts`);
  writeFileSync(file, sample.code.replaceAll("from '@workspace-ai/client'", `from '${SDK_ENTRY}'`));
  return run(process.execPath, ['--import', TSX_LOADER, file], { ...env, ...sampleState() });
}

describe('docs/api-guide.md', () => {
  const markdown = readFileSync(GUIDE, 'utf8');
  const samples = extractSamples(markdown);

  it('marks every sh and ts block as a sample, with a unique name', () => {
    expect(samples.length).toBeGreaterThan(10);
    expect(samples.length).toBe((markdown.match(/^```(sh|ts)$/gm) ?? []).length);
    expect(new Set(samples.map((s) => s.name)).size).toBe(samples.length);
  });

  it('runs every sample, in order, against the real service', async () => {
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: workDir,
      BASE: app.baseUrl,
      MAIL_DIR: path.join(app.t.config.DATA_DIR, 'mail'),
    };
    for (const sample of samples) {
      before[sample.name]?.();
      const { code, output } = await runSample(sample, env);
      expect(code, `sample "${sample.name}" failed:\n${output}`).toBe(0);
      if (sample.expect !== undefined) expect(output, `sample "${sample.name}" output`).toContain(sample.expect);
    }
  }, 180_000);
});
