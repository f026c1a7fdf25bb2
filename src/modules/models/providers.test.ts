import { APICallError, embedMany, experimental_transcribe as transcribe, generateText, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FAKE_KEYS, fakeEmbedding, type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { loadConfig } from '../../config/env.js';
import { AppError } from '../../platform/errors.js';
import { createCatalog, type ModelCatalog } from './catalog.js';
import { type ModelRegistry, createModelRegistry, parseModelSpec, providerConfigured } from './providers.js';

/*
 * The registry through the AI SDK's real provider clients, talking HTTP to the fake model server.
 * Every call sets maxRetries: 0 so scripted failures fail at once (the SDK retries twice by default).
 */

let fake: FakeModelServer;
let catalog: ModelCatalog;
let registry: ModelRegistry;

const compatibleControls = {
  temperature: { max: 2 },
  top_p: true,
  top_k: true,
  penalties: true,
  seed: true,
  stop: 'stop',
  reasoning_effort: ['low', 'high'],
  thinking: false,
  temperature_or_top_p: false,
};

beforeAll(async () => {
  fake = await startFakeModelServer();
  catalog = createCatalog({
    models: [
      {
        id: 'llama3.1:8b',
        label: 'Llama 3.1 8B',
        provider: 'openai-compatible',
        tier: 'fast',
        max_output_tokens: 8192,
        context_window: 131_072,
        input_price_per_million: 0,
        output_price_per_million: 0,
        controls: compatibleControls,
      },
    ],
    embedding_models: [{ id: 'nomic-embed-text', provider: 'openai-compatible', dimensions: 768, input_price_per_million: 0 }],
    transcription_models: [{ id: 'whisper-large-v3', provider: 'openai-compatible', price_per_minute: 0 }],
  });
  registry = createModelRegistry(loadConfig(fake.env), catalog);
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.reset();
});

function expectAppError(fn: () => unknown, status: number, code: string, detail?: RegExp) {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(status);
    expect((error as AppError).code).toBe(code);
    if (detail) expect((error as AppError).detail).toMatch(detail);
    return;
  }
  throw new Error(`expected an AppError ${code}`);
}

/** A tiny WAV file (RIFF header + silence), so the SDK detects audio/wav. */
function wav(bytes: number): Uint8Array {
  const data = new Uint8Array(44 + bytes);
  data.set(new TextEncoder().encode('RIFF'), 0);
  data.set(new TextEncoder().encode('WAVEfmt '), 8);
  return data;
}

const chatCases = [
  { id: 'gpt-4.1', provider: 'openai.chat', path: '/v1/chat/completions', auth: ['authorization', `Bearer ${FAKE_KEYS.openai}`] },
  { id: 'claude-sonnet-4-5', provider: 'anthropic.messages', path: '/v1/messages', auth: ['x-api-key', FAKE_KEYS.anthropic] },
  { id: 'gemini-2.5-flash', provider: 'google.generative-ai', path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent', auth: ['x-goog-api-key', FAKE_KEYS.google] },
  { id: 'llama3.1:8b', provider: 'openai-compatible.chat', path: '/v1/chat/completions', auth: ['authorization', `Bearer ${FAKE_KEYS.openaiCompatible}`] },
] as const;

describe('models loaded at their first call', () => {
  // The registry's models load their provider package on their first call (start-up time) and
  // name themselves before that: the names must be the provider's own models'.
  it('describe themselves as the provider\'s own models do, for every provider and kind', async () => {
    const [{ createOpenAI }, { createAnthropic }, { createGoogleGenerativeAI }, { createOpenAICompatible }] = await Promise.all([
      import('@ai-sdk/openai'),
      import('@ai-sdk/anthropic'),
      import('@ai-sdk/google'),
      import('@ai-sdk/openai-compatible'),
    ]);
    const openai = createOpenAI({ apiKey: 'x' });
    const google = createGoogleGenerativeAI({ apiKey: 'x' });
    const compatible = createOpenAICompatible({ name: 'openai-compatible', baseURL: 'http://127.0.0.1:9' });
    const pairs = [
      [registry.languageModel('gpt-4.1'), openai.chat('gpt-4.1')],
      [registry.languageModel('claude-sonnet-4-5'), createAnthropic({ apiKey: 'x' }).messages('claude-sonnet-4-5')],
      [registry.languageModel('gemini-2.5-flash'), google.chat('gemini-2.5-flash')],
      [registry.languageModel('llama3.1:8b'), compatible.chatModel('llama3.1:8b')],
      [registry.embeddingModel('openai:text-embedding-3-small').model, openai.embedding('text-embedding-3-small')],
      [registry.embeddingModel('google:gemini-embedding-001').model, google.embedding('gemini-embedding-001')],
      [registry.embeddingModel('openai-compatible:nomic-embed-text').model, compatible.embeddingModel('nomic-embed-text')],
      [registry.transcriptionModel('openai:whisper-1').model, openai.transcription('whisper-1')],
      [registry.transcriptionModel('openai-compatible:whisper-large-v3').model, createOpenAI({ name: 'openai-compatible', apiKey: 'x' }).transcription('whisper-large-v3')],
    ] as const;
    for (const [lazy, own] of pairs) {
      expect({ spec: lazy.specificationVersion, provider: lazy.provider, model: lazy.modelId }).toEqual({
        spec: own.specificationVersion,
        provider: own.provider,
        model: own.modelId,
      });
    }
    const { model: embedding } = registry.embeddingModel('openai:text-embedding-3-small');
    expect(await embedding.maxEmbeddingsPerCall).toBe(await openai.embedding('text-embedding-3-small').maxEmbeddingsPerCall);
    expect(await embedding.supportsParallelCalls).toBe(await openai.embedding('text-embedding-3-small').supportsParallelCalls);
  });
});

describe('languageModel', () => {
  it.each(chatCases)('$id streams text deltas and the final usage through $provider', async ({ id, provider, path, auth }) => {
    fake.enqueue({ text: 'The answer is forty-two.', chunks: 4, usage: { inputTokens: 12, outputTokens: 6 } });
    const model = registry.languageModel(id);
    expect(model.provider).toBe(provider);
    const result = streamText({ model, prompt: 'What is the answer?', maxRetries: 0 });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas).toEqual(['The an', 'swer i', 's fort', 'y-two.']);
    const usage = await result.usage;
    expect([usage.inputTokens, usage.outputTokens, usage.totalTokens]).toEqual([12, 6, 18]);
    const [request] = fake.requests;
    expect(request!.path).toBe(path);
    expect(request!.stream).toBe(true);
    expect(request!.headers[auth[0]]).toBe(auth[1]);
    if (request!.api === 'openai.chat') {
      // Chat Completions (not the Responses API), asking for the usage chunk.
      expect(request!.body).toMatchObject({ model: id, stream: true, stream_options: { include_usage: true } });
    }
  });

  it('answers without streaming through generateText', async () => {
    fake.enqueue({ text: 'Plain answer.', usage: { inputTokens: 3, outputTokens: 2 } });
    const result = await generateText({ model: registry.languageModel('claude-3-5-haiku-latest'), prompt: 'hi', maxOutputTokens: 100, maxRetries: 0 });
    expect(result.text).toBe('Plain answer.');
    expect(result.usage.outputTokens).toBe(2);
    expect(fake.requests[0]!.body).toMatchObject({ model: 'claude-3-5-haiku-latest' });
    expect(fake.requests[0]!.headers['anthropic-version']).toBe('2023-06-01');
  });

  it.each(chatCases)('$id runs a tool round-trip with stopWhen', async ({ id }) => {
    fake.enqueue({ toolCalls: [{ name: 'lookup', args: { query: 'refund policy' } }], usage: { inputTokens: 10, outputTokens: 5 } });
    fake.enqueue({ text: 'Refunds are accepted for 30 days.', usage: { inputTokens: 20, outputTokens: 7 } });
    const seen: string[] = [];
    const result = streamText({
      model: registry.languageModel(id),
      prompt: 'What is the refund policy?',
      tools: {
        lookup: tool({
          description: 'Search the knowledge base',
          inputSchema: z.object({ query: z.string() }),
          execute: async ({ query }) => {
            seen.push(query);
            return { answer: `30 days (${query})` };
          },
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(await result.text).toBe('Refunds are accepted for 30 days.');
    expect(seen).toEqual(['refund policy']);
    expect(await result.steps).toHaveLength(2);
    const total = await result.totalUsage;
    expect([total.inputTokens, total.outputTokens]).toEqual([30, 12]);

    expect(fake.requests).toHaveLength(2);
    const [first, second] = fake.requests.map((r) => r.body);
    const secondText = JSON.stringify(second);
    expect(secondText).toContain('30 days (refund policy)');
    if (fake.requests[0]!.api === 'openai.chat') {
      expect(first.tools[0]).toMatchObject({ type: 'function', function: { name: 'lookup' } });
      const call = second.messages.find((m: { role: string }) => m.role === 'assistant').tool_calls[0];
      expect(call).toMatchObject({ type: 'function', function: { name: 'lookup', arguments: '{"query":"refund policy"}' } });
      expect(second.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: call.id });
    } else if (fake.requests[0]!.api === 'anthropic.messages') {
      expect(first.tools[0]).toMatchObject({ name: 'lookup', input_schema: { type: 'object' } });
      const use = second.messages[1].content.find((b: { type: string }) => b.type === 'tool_use');
      expect(use).toMatchObject({ name: 'lookup', input: { query: 'refund policy' } });
      expect(second.messages.at(-1).content[0]).toMatchObject({ type: 'tool_result', tool_use_id: use.id });
    } else {
      expect(first.tools[0].functionDeclarations[0]).toMatchObject({ name: 'lookup' });
      expect(second.contents[1].parts[0]).toMatchObject({ functionCall: { name: 'lookup', args: { query: 'refund policy' } } });
      expect(second.contents.at(-1).parts[0]).toMatchObject({ functionResponse: { name: 'lookup' } });
    }
  });

  it.each(chatCases)('$id stops on abort in the middle of a slow stream', async ({ id }) => {
    fake.enqueue({ text: 'one two three four five six seven eight nine ten', chunks: 10, delayMs: 100 });
    const controller = new AbortController();
    let aborted = false;
    const result = streamText({ model: registry.languageModel(id), prompt: 'count', abortSignal: controller.signal, maxRetries: 0, onAbort: () => void (aborted = true) });
    const parts: string[] = [];
    for await (const part of result.fullStream) {
      parts.push(part.type);
      if (part.type === 'text-delta') controller.abort();
    }
    // Usually exactly one delta; a starved event loop may have queued one more before abort().
    expect(parts.filter((p) => p === 'text-delta').length).toBeLessThan(10);
    expect(parts.at(-1)).toBe('abort');
    expect(aborted).toBe(true);
    await expect(result.text).rejects.toThrow(/abort/i);
    // The HTTP request was closed too, not just the SDK's stream.
    await expect.poll(() => fake.requests[0]!.aborted, { timeout: 5000 }).toBe(true);
  });

  it.each(chatCases)('$id surfaces a dropped connection mid-stream as a thrown error', async ({ id }) => {
    fake.enqueue({ text: 'abcdef', chunks: 3, failAfterChunks: 1 });
    const result = streamText({ model: registry.languageModel(id), prompt: 'x', maxRetries: 0 });
    const deltas: string[] = [];
    const consume = async () => {
      for await (const part of result.fullStream) if (part.type === 'text-delta') deltas.push(part.text);
    };
    await expect(consume()).rejects.toThrow();
    // 'ab' arrives before the cut; a reset can discard a delta that was queued but not yet read.
    expect(['ab', '']).toContain(deltas.join(''));
  });

  it.each(chatCases)('$id surfaces an in-stream error event as an error part', async ({ id }) => {
    fake.enqueue({ text: 'abcdef', chunks: 3, failAfterChunks: 1, failMode: 'error-event', errorMessage: 'model overloaded' });
    const errors: unknown[] = [];
    const result = streamText({ model: registry.languageModel(id), prompt: 'x', maxRetries: 0, onError: ({ error }) => void errors.push(error) });
    const parts: string[] = [];
    for await (const part of result.fullStream) parts.push(part.type);
    expect(parts).toContain('error');
    expect(errors).toHaveLength(1);
    // OpenAI and Anthropic hand over the raw error object, Google an APICallError.
    expect(JSON.stringify(errors[0]) + String((errors[0] as Error).message)).toContain('model overloaded');
  });

  it('reports an HTTP error status as an APICallError', async () => {
    fake.enqueue({ status: 500, errorMessage: 'boom' });
    const error = await generateText({ model: registry.languageModel('gpt-4.1-mini'), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect((error as APICallError).statusCode).toBe(500);
    expect((error as APICallError).message).toBe('boom');
  });

  it('refuses unknown models and unconfigured providers with typed errors', () => {
    expectAppError(() => registry.languageModel('gpt-99'), 400, 'unknown_model', /gpt-99/);
    const bare = createModelRegistry(loadConfig({ OPENAI_COMPATIBLE_API_KEY: 'key-without-url' }), catalog);
    expectAppError(() => bare.languageModel('gpt-4.1'), 503, 'model_provider_not_configured', /OPENAI_API_KEY or OPENAI_BASE_URL/);
    expectAppError(() => bare.languageModel('claude-sonnet-4-5'), 503, 'model_provider_not_configured', /ANTHROPIC_API_KEY/);
    expectAppError(() => bare.languageModel('gemini-2.5-pro'), 503, 'model_provider_not_configured', /GOOGLE_GENERATIVE_AI_API_KEY/);
    expectAppError(() => bare.languageModel('llama3.1:8b'), 503, 'model_provider_not_configured', /OPENAI_COMPATIBLE_BASE_URL/);
  });

  it('reaches a server configured by base URL alone (no key)', async () => {
    const keyless = createModelRegistry(loadConfig({ OPENAI_BASE_URL: fake.openaiBaseUrl }), catalog);
    const result = await generateText({ model: keyless.languageModel('gpt-4o-mini'), prompt: 'hi', maxRetries: 0 });
    expect(result.text).toBe('Echo: hi');
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer not-configured');
  });
});

describe('embeddingModel', () => {
  it('embeds through OpenAI with deterministic vectors and usage', async () => {
    const { model, entry } = registry.embeddingModel('openai:text-embedding-3-small');
    expect(entry).toMatchObject({ id: 'text-embedding-3-small', dimensions: 1536 });
    const { embeddings, usage } = await embedMany({ model, values: ['red apples', 'green pears ripe'], maxRetries: 0 });
    expect(embeddings.map((e) => e.length)).toEqual([1536, 1536]);
    expect(embeddings[0]).toEqual(fakeEmbedding('red apples', 1536));
    expect(usage.tokens).toBe(5);
    expect(fake.requests[0]).toMatchObject({ path: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: ['red apples', 'green pears ripe'], encoding_format: 'float' } });
  });

  it('embeds through Google and openai-compatible servers', async () => {
    const google = registry.embeddingModel('google:gemini-embedding-001');
    const g = await embedMany({ model: google.model, values: ['a', 'b'], maxRetries: 0 });
    expect(g.embeddings[1]).toEqual(fakeEmbedding('b', 3072));
    expect(fake.requests[0]!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    const compatible = registry.embeddingModel('openai-compatible:nomic-embed-text');
    expect(compatible.entry.dimensions).toBe(768);
    await embedMany({ model: compatible.model, values: ['c'], maxRetries: 0 });
    expect(fake.requests[1]!.headers.authorization).toBe(`Bearer ${FAKE_KEYS.openaiCompatible}`);
  });

  it('refuses specs it cannot serve', () => {
    expectAppError(() => registry.embeddingModel('openai:text-embedding-9'), 503, 'model_not_configured', /MODEL_CATALOG_FILE/);
    expectAppError(() => registry.embeddingModel('anthropic:text-embedding-3-small'), 503, 'model_not_configured', /Anthropic/);
    expectAppError(() => registry.embeddingModel('text-embedding-3-small'), 503, 'model_not_configured', /provider:model/);
    expectAppError(() => registry.embeddingModel('azure:text-embedding-3-small'), 503, 'model_not_configured', /provider:model/);
    const bare = createModelRegistry(loadConfig({}), catalog);
    expectAppError(() => bare.embeddingModel('openai:text-embedding-3-small'), 503, 'model_provider_not_configured', /OPENAI_API_KEY/);
  });
});

describe('transcriptionModel', () => {
  it('transcribes with whisper as verbose_json: text, language and duration', async () => {
    fake.enqueueTranscription({ text: 'Hello from the meeting.', language: 'german', duration: 12.5 });
    const { model, entry, providerOptions } = registry.transcriptionModel('openai:whisper-1');
    expect(entry.price_per_minute).toBe(0.006);
    const result = await transcribe({ model, audio: wav(32_000), providerOptions, maxRetries: 0 });
    expect(result).toMatchObject({ text: 'Hello from the meeting.', language: 'de', durationInSeconds: 12.5 });
    expect(result.segments).toHaveLength(1);
    const [request] = fake.requests;
    expect(request).toMatchObject({ path: '/v1/audio/transcriptions', api: 'openai.transcriptions' });
    expect(request!.body.fields).toMatchObject({ model: 'whisper-1', response_format: 'verbose_json' });
    expect(request!.body.files).toEqual([{ field: 'file', filename: 'audio.wav', contentType: 'audio/wav', size: 32_044 }]);
  });

  it('gets plain json (text only) from the gpt-4o transcribe models', async () => {
    const { model, providerOptions } = registry.transcriptionModel('openai:gpt-4o-mini-transcribe');
    const result = await transcribe({ model, audio: wav(100), providerOptions, maxRetries: 0 });
    expect(result.text).toBe('This is a fake transcript.');
    expect(result.language).toBeUndefined();
    expect(fake.requests[0]!.body.fields.response_format).toBe('json');
  });

  it('sends openai-compatible transcriptions to that server with its key', async () => {
    const { model, providerOptions } = registry.transcriptionModel('openai-compatible:whisper-large-v3');
    await transcribe({ model, audio: wav(100), providerOptions, maxRetries: 0 });
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${FAKE_KEYS.openaiCompatible}`);
    expectAppError(() => registry.transcriptionModel('anthropic:whisper-1'), 503, 'model_not_configured');
    expectAppError(() => registry.transcriptionModel('openai:nope'), 503, 'model_not_configured');
  });
});

describe('helpers', () => {
  it('parses provider:model specs, keeping colons in the model part', () => {
    expect(parseModelSpec('openai-compatible:llama3.1:8b')).toEqual({ provider: 'openai-compatible', modelId: 'llama3.1:8b' });
    expect(() => parseModelSpec('openai:')).toThrow(AppError);
  });

  it('tells whether a provider is configured', () => {
    const config = loadConfig({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_COMPATIBLE_API_KEY: 'k' });
    expect(providerConfigured(config, 'anthropic')).toBe(true);
    expect(providerConfigured(config, 'openai')).toBe(false);
    expect(providerConfigured(config, 'openai-compatible')).toBe(false);
  });
});
