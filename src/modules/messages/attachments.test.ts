import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { FormPart } from '../../platform/multipart.js';
import { createLocalStorage } from '../../platform/storage/local.js';
import { receiveParts } from './attachments.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function localStorage() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'wsai-attachments-'));
  dirs.push(root);
  return { root, storage: createLocalStorage({ root, secret: 'test-secret', publicBaseUrl: 'http://127.0.0.1', maxUploadBytes: 1_000_000 }) };
}

const filesUnder = (root: string) =>
  readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => entry.name);

async function* partsOf(...parts: FormPart[]): AsyncGenerator<FormPart> {
  yield* parts;
}

describe('receiveParts: a file stream that failed before it was handed over', () => {
  // On Node 24 the multipart parser destroys the file stream of a body cut short before the part
  // reaches the consumer: its 'error' has already been emitted, and a pipe from it never ends.
  it('rejects with the stream\'s error, and nothing stays stored', async () => {
    const { root, storage } = localStorage();
    const stream = new PassThrough();
    stream.on('error', () => undefined);
    stream.write('partial');
    stream.destroy(new Error('Part terminated early due to unexpected end of multipart data'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.destroyed).toBe(true);

    const file: FormPart = { type: 'file', field: 'files', filename: 'notes.txt', mimetype: 'text/plain', stream, truncated: () => false };
    const received = receiveParts(partsOf({ type: 'field', name: 'content', value: 'Hello' }, file), {
      storage,
      keyPrefix: 'workspaces/w/chats/c/attachments',
      maxFileBytes: 1_000_000,
    });
    await expect(received).rejects.toThrow('unexpected end of multipart data');
    expect(filesUnder(root)).toEqual([]);
  });
});
