import { readdirSync } from 'node:fs';
import path from 'node:path';
import { isNull } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { type ChatWorld, chatWorld, messageRows, useChatTestApp } from '../../test/support/chat.js';
import { type FormPart, multipartBody, wavFile } from '../../test/support/multipart.js';
import { creditReservations } from '../modules/billing/billing.table.js';

/*
 * Multipart bodies through the real app: a malformed body, a limit or a bad string in a part is
 * a 4xx with a truthful {detail, code}, and nothing happens: no message row, no stored file, no
 * model request, no event stream, no credit held. (Before the gate, `Unexpected end of multipart
 * data` and `Boundary not found` were 500s, and 200 fields answered 413 "Bad request.".)
 */

const { t, fake } = useChatTestApp({ THROTTLE_TRANSCRIPTIONS: '1000/minute' });

const BOUNDARY = '----wsai-test-boundary-7MA4YWxkTrZu0gW';

/** A well-formed body cut before its closing boundary (and, with `cut`, inside the last part). */
function truncated(parts: FormPart[], cut = 0): Buffer {
  const { payload } = multipartBody(parts, BOUNDARY);
  const end = payload.length - `--${BOUNDARY}--\r\n`.length;
  return payload.subarray(0, end - cut);
}

const form = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };

function storedFiles(w: ChatWorld): string[] {
  const root = path.join(t.config.DATA_DIR, 'files', 'workspaces', w.ws.id, 'chats', w.chat.id);
  try {
    return readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.join(entry.parentPath, entry.name))
      .filter((file) => !file.includes(`${path.sep}.tmp${path.sep}`) && !file.includes(`${path.sep}.meta${path.sep}`));
  } catch {
    return [];
  }
}

function expectJsonError(res: { statusCode: number; headers: Record<string, unknown>; body: string; json(): unknown }, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  // An error, not an event stream.
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ detail: expect.any(String), code });
  expect(Object.keys(body).sort()).toEqual(body.errors ? ['code', 'detail', 'errors'] : ['code', 'detail']);
  return body as { detail: string; code: string; errors?: Record<string, string[]> };
}

async function expectNothingHappened(w: ChatWorld) {
  expect(await messageRows(t, w.chat.id)).toHaveLength(0);
  expect(storedFiles(w)).toEqual([]);
  expect(fake.requests).toHaveLength(0);
}

const textFile = (data: string, filename = 'notes.txt'): FormPart => ({ name: 'files', filename, contentType: 'text/plain', data: Buffer.from(data) });

describe('malformed multipart on message send and stream', () => {
  const endpoints = [
    ['send', ''],
    ['stream', 'stream/'],
  ] as const;

  it.each(endpoints)('%s: a body without its closing boundary is 400 parse_error; nothing saved, no model, no stream', async (_name, suffix) => {
    const w = await chatWorld(t);
    const res = await t.request('POST', `${w.base}${suffix}`, {
      as: w.alice,
      headers: { ...form, accept: 'text/event-stream' },
      body: truncated([{ name: 'content', value: 'Hello' }]),
    });
    const body = expectJsonError(res, 400, 'parse_error');
    expect(body.detail).toMatch(/multipart/i);
    await expectNothingHappened(w);
  });

  it.each(endpoints)('%s: a file cut short before its boundary is 400; the stored part is removed', async (_name, suffix) => {
    const w = await chatWorld(t);
    const res = await t.request('POST', `${w.base}${suffix}`, {
      as: w.alice,
      headers: form,
      body: truncated([{ name: 'content', value: 'Hello' }, textFile('x'.repeat(50_000))], 10),
    });
    expectJsonError(res, 400, 'parse_error');
    await expectNothingHappened(w);
  });

  it.each(endpoints)('%s: a multipart Content-Type without a boundary is 400 parse_error', async (_name, suffix) => {
    const w = await chatWorld(t);
    const res = await t.request('POST', `${w.base}${suffix}`, {
      as: w.alice,
      headers: { 'content-type': 'multipart/form-data', accept: 'text/event-stream' },
      body: multipartBody([{ name: 'content', value: 'Hello' }], BOUNDARY).payload,
    });
    const body = expectJsonError(res, 400, 'parse_error');
    expect(body.detail).toMatch(/boundary/i);
    await expectNothingHappened(w);
  });

  it('200 fields are 400 too_many_fields with a detail that says so', async () => {
    const w = await chatWorld(t);
    const parts = Array.from({ length: 200 }, (_, i) => ({ name: `f${i}`, value: 'v' }));
    const res = await t.request('POST', w.base, { as: w.alice, headers: form, body: multipartBody([{ name: 'content', value: 'Hi' }, ...parts], BOUNDARY).payload });
    const body = expectJsonError(res, 400, 'too_many_fields');
    expect(body.detail).toBe('Too many fields in the multipart request.');
    await expectNothingHappened(w);
  });

  it('a field longer than the multipart limit is refused naming it, never silently cut', async () => {
    const w = await chatWorld(t);
    const res = await t.request('POST', w.base, {
      as: w.alice,
      headers: form,
      body: multipartBody([{ name: 'content', value: 'x'.repeat(1_000_000) }], BOUNDARY).payload,
    });
    const body = expectJsonError(res, 400, 'validation_error');
    expect(Object.keys(body.errors!)).toEqual(['content']);
    await expectNothingHappened(w);
  });

  it.each([
    ['a field value', [{ name: 'content', value: 'Hi\u0000there' }], 'content'],
    ['a file name', [{ name: 'content', value: 'Hi' }, textFile('data', 'a\u0000.txt')], 'files'],
    ['a field name', [{ name: 'con\u0000tent', value: 'Hi' }], 'non_field_errors'],
    ['a stream_id after a stored file', [{ name: 'content', value: 'Hi' }, textFile('data'), { name: 'stream_id', value: 's\u0000' }], 'stream_id'],
  ] as const)('a NUL in %s is 400 validation_error naming the field; nothing saved', async (_label, parts, field) => {
    const w = await chatWorld(t);
    const res = await t.request('POST', `${w.base}stream/`, {
      as: w.alice,
      headers: form,
      body: multipartBody(parts as unknown as FormPart[], BOUNDARY).payload,
    });
    const body = expectJsonError(res, 400, 'validation_error');
    expect(Object.keys(body.errors!)).toEqual([field]);
    await expectNothingHappened(w);
  });
});

describe('malformed multipart on transcribe-audio', () => {
  const openReservations = () => t.deps.database.db.select().from(creditReservations).where(isNull(creditReservations.closedAt));
  const audio: FormPart = { name: 'audio_file', filename: 'note.wav', contentType: 'audio/wav', data: wavFile(32_044) };

  async function transcribe(w: ChatWorld, payload: Buffer, headers: Record<string, string> = form) {
    return t.request('POST', '/api/transcribe-audio/', { as: w.alice, headers, body: payload });
  }

  it('a body without its closing boundary is 400 parse_error; no model call, no credit held', async () => {
    const w = await chatWorld(t);
    const res = await transcribe(w, truncated([{ name: 'workspace_id', value: w.ws.id }, audio]));
    expectJsonError(res, 400, 'parse_error');
    expect(fake.requests).toHaveLength(0);
    expect(await openReservations()).toEqual([]);
  });

  it('audio cut short inside the file is 400 parse_error', async () => {
    const w = await chatWorld(t);
    const res = await transcribe(w, truncated([{ name: 'workspace_id', value: w.ws.id }, audio], 1000));
    expectJsonError(res, 400, 'parse_error');
    expect(fake.requests).toHaveLength(0);
    expect(await openReservations()).toEqual([]);
  });

  it('no boundary in the Content-Type is 400 parse_error', async () => {
    const w = await chatWorld(t);
    const res = await transcribe(w, multipartBody([{ name: 'workspace_id', value: w.ws.id }, audio], BOUNDARY).payload, {
      'content-type': 'multipart/form-data',
    });
    expectJsonError(res, 400, 'parse_error');
    expect(fake.requests).toHaveLength(0);
  });

  it('a NUL in workspace_id or language is 400 naming it (it never reaches the database)', async () => {
    const w = await chatWorld(t);
    for (const field of ['workspace_id', 'language']) {
      const parts = [{ name: 'workspace_id', value: w.ws.id }, { name: 'language', value: 'en' }, audio].map((part) =>
        'value' in part && part.name === field ? { ...part, value: `${part.value}\u0000` } : part,
      );
      const res = await transcribe(w, multipartBody(parts, BOUNDARY).payload);
      const body = expectJsonError(res, 400, 'validation_error');
      expect(body.errors).toEqual({ [field]: ['Null characters are not allowed.'] });
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('too many fields is 400 too_many_fields', async () => {
    const w = await chatWorld(t);
    const parts = Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, value: 'v' }));
    const res = await transcribe(w, multipartBody([{ name: 'workspace_id', value: w.ws.id }, ...parts, audio], BOUNDARY).payload);
    expectJsonError(res, 400, 'too_many_fields');
    expect(fake.requests).toHaveLength(0);
  });
});
