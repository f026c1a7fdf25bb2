import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, useTestApp } from '../../../test/support/app.js';
import { addMember, newUser, newWorkspace } from '../../../test/support/factories.js';
import { type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { multipartBody, wavFile } from '../../../test/support/multipart.js';
import { creditUsage } from '../billing/billing.table.js';

/*
 * TRANSCRIPTION_MODEL and TRANSLATION_MODEL set by the operator, and servers where models are
 * missing or misconfigured (503).
 */

let fake: FakeModelServer;
const env: Record<string, string> = {};
beforeAll(async () => {
  fake = await startFakeModelServer();
  // gpt-4o-mini-transcribe answers plain json (no duration); gpt-5-mini is outside the free plan and takes no temperature.
  Object.assign(env, fake.env, { TRANSCRIPTION_MODEL: 'openai:gpt-4o-mini-transcribe', TRANSLATION_MODEL: 'openai:gpt-5-mini' });
});
afterAll(async () => {
  await fake.close();
});
const t = useTestApp(env);

/** model_calls_total for one kind/model/outcome, read from the app's own registry. */
async function modelCalls(app: TestApp, labels: { kind: string; model: string; outcome: string }): Promise<number> {
  const metric = await app.deps.metrics.registry.getSingleMetric('model_calls_total')!.get();
  const match = metric.values.find((v) => Object.entries(labels).every(([key, value]) => v.labels[key] === value));
  return match?.value ?? 0;
}

async function setup(app: TestApp = t) {
  fake.reset();
  const owner = await newUser(app);
  const member = await newUser(app);
  const ws = await newWorkspace(app, owner);
  await addMember(app, ws, member);
  return { owner, member, ws };
}

function transcribeRequest(app: TestApp, workspaceId: string, as: { token: string }, audioBytes = 32_044) {
  const body = multipartBody([
    { name: 'workspace_id', value: workspaceId },
    { name: 'language', value: 'de' },
    { name: 'audio_file', filename: 'a.wav', contentType: 'audio/wav', data: wavFile(audioBytes) },
  ]);
  return app.request('POST', '/api/transcribe-audio/', { as, body: body.payload, headers: body.headers });
}

describe('operator-chosen models', () => {
  it('transcribes with TRANSCRIPTION_MODEL and bills the length estimated from the file when no duration comes back', async () => {
    const { member, ws } = await setup();
    fake.enqueueTranscription({ text: 'Hallo.' });
    const calls = { kind: 'transcription', model: 'gpt-4o-mini-transcribe', outcome: 'ok' };
    const before = await modelCalls(t, calls);
    const res = await transcribeRequest(t, ws.id, member, 32_000 * 2 + 44);
    expect(res.statusCode, res.body).toBe(200);
    expect(await modelCalls(t, calls)).toBe(before + 1);
    // No duration or segments from this model; the language is the caller's hint.
    expect(res.json()).toEqual({ text: 'Hallo.', language: 'de' });
    expect(fake.requests[0]!.body.fields).toMatchObject({ model: 'gpt-4o-mini-transcribe', response_format: 'json', language: 'de' });
    const [row] = await t.deps.database.db.select().from(creditUsage);
    expect(row).toMatchObject({ kind: 'transcription', model: 'gpt-4o-mini-transcribe', seconds: 2 });
    expect(row!.costUsd).toBeCloseTo((2 / 60) * 0.003, 10);
  });

  it('translates with TRANSLATION_MODEL whatever the plan, without a temperature the model refuses', async () => {
    const { member, ws } = await setup();
    fake.enqueue({ text: 'Hallo' });
    const calls = { kind: 'translation', model: 'gpt-5-mini', outcome: 'ok' };
    const before = await modelCalls(t, calls);
    const res = await t.post(`/api/workspaces/${ws.id}/translate/`, { text: 'Hello', target_language: 'German' }, member);
    expect(res.statusCode, res.body).toBe(200);
    expect(await modelCalls(t, calls)).toBe(before + 1);
    expect(res.json()).toEqual({ translated_text: 'Hallo', target_language: 'de', model: 'gpt-5-mini' });
    const [request] = fake.requests;
    expect(request!.model).toBe('gpt-5-mini');
    expect(request!.body).not.toHaveProperty('temperature');
    const [row] = await t.deps.database.db.select().from(creditUsage);
    expect(row).toMatchObject({ kind: 'translation', model: 'gpt-5-mini' });
  });
});

describe('unconfigured models', () => {
  let bare: TestApp;
  let misconfigured: TestApp;
  beforeAll(async () => {
    bare = await createTestApp({});
    misconfigured = await createTestApp({ ...fake.env, TRANSCRIPTION_MODEL: 'openai:nope', TRANSLATION_MODEL: 'anthropic:gpt-4.1-mini' });
  });
  afterAll(async () => {
    await Promise.all([bare?.close(), misconfigured?.close()]);
  });

  it('answers 503 model_not_configured for transcription when no provider is set', async () => {
    const { member, ws } = await setup(bare);
    const res = await transcribeRequest(bare, ws.id, member);
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('model_not_configured');
  });

  it('answers 503 when the plan model’s provider is not configured', async () => {
    const { member, ws } = await setup(bare);
    const res = await bare.post(`/api/workspaces/${ws.id}/translate/`, { text: 'Hello', target_language: 'fr' }, member);
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('model_provider_not_configured');
  });

  it('answers 503 model_not_configured for models missing from the catalog or on the wrong provider', async () => {
    const { member, ws } = await setup(misconfigured);
    const audio = await transcribeRequest(misconfigured, ws.id, member);
    expect(audio.statusCode).toBe(503);
    expect(audio.json().code).toBe('model_not_configured');
    const text = await misconfigured.post(`/api/workspaces/${ws.id}/translate/`, { text: 'Hello', target_language: 'fr' }, member);
    expect(text.statusCode).toBe(503);
    expect(text.json().code).toBe('model_not_configured');
    expect(fake.requests).toHaveLength(0);
  });
});
