import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { addMember, newUser, newWorkspace } from '../../../test/support/factories.js';
import { type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { multipartBody, wavFile } from '../../../test/support/multipart.js';

/*
 * THROTTLE_TRANSCRIPTIONS / THROTTLE_TRANSLATIONS at 2 a minute. A file of its own: counters
 * outlive the per-test truncation (user ids restart), so one test per throttle scope.
 */

let fake: FakeModelServer;
const env: Record<string, string> = {};
beforeAll(async () => {
  fake = await startFakeModelServer();
  Object.assign(env, fake.env, { THROTTLE_TRANSCRIPTIONS: '2/minute', THROTTLE_TRANSLATIONS: '2/minute' });
});
afterAll(async () => {
  await fake.close();
});
const t = useTestApp(env);

async function setup() {
  fake.reset();
  const owner = await newUser(t);
  const member = await newUser(t);
  const ws = await newWorkspace(t, owner);
  await addMember(t, ws, member);
  return { owner, member, ws };
}

describe('throttles', () => {
  it('allows 2 transcriptions a minute per user, then 429 with Retry-After', async () => {
    const { owner, member, ws } = await setup();
    const body = multipartBody([
      { name: 'workspace_id', value: ws.id },
      { name: 'audio_file', filename: 'a.wav', contentType: 'audio/wav', data: wavFile(32_044) },
    ]);
    const send = (as: typeof member) => t.request('POST', '/api/transcribe-audio/', { as, body: body.payload, headers: body.headers });
    expect((await send(member)).statusCode).toBe(200);
    expect((await send(member)).statusCode).toBe(200);
    const third = await send(member);
    expect(third.statusCode).toBe(429);
    expect(third.json().code).toBe('throttled');
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(third.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(fake.requestsTo('openai.transcriptions')).toHaveLength(2);
    // Per user: another member still may.
    expect((await send(owner)).statusCode).toBe(200);
  });

  it('allows 2 translations a minute per user, then 429 with Retry-After', async () => {
    const { owner, member, ws } = await setup();
    const send = (as: typeof member) => t.post(`/api/workspaces/${ws.id}/translate/`, { text: 'Hello', target_language: 'fr' }, as);
    expect((await send(member)).statusCode).toBe(200);
    expect((await send(member)).statusCode).toBe(200);
    const third = await send(member);
    expect(third.statusCode).toBe(429);
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(fake.requestsTo('openai.chat')).toHaveLength(2);
    expect((await send(owner)).statusCode).toBe(200);
  });
});
