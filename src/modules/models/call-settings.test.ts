import { generateText } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeModelServer, startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { loadConfig } from '../../config/env.js';
import {
  buildCallSettings,
  DEFAULT_MAX_OUTPUT_TOKENS,
  DEFAULT_REASONING_MAX_OUTPUT_TOKENS,
  DEFAULT_THINKING_BUDGET,
  modelParametersSchema,
  type SessionSettings,
} from './call-settings.js';
import { createCatalog } from './catalog.js';
import type { ChatModel, ModelControls } from './models.schemas.js';
import { createModelRegistry, type ModelRegistry } from './providers.js';

/*
 * Each control rule twice: what buildCallSettings decides, and the exact body the provider's
 * real AI SDK client then sends to the fake server (the SDKs rename, move and strip settings).
 */

const compatibleControls: ModelControls = {
  temperature: { max: 1.5 },
  top_p: true,
  top_k: true,
  penalties: true,
  seed: true,
  stop: 'stop',
  reasoning_effort: ['low', 'high'],
  thinking: false,
  temperature_or_top_p: false,
};

const catalog = createCatalog({
  models: [
    // Effort levels on the other providers (no built-in model has them yet).
    {
      id: 'claude-effort-test',
      label: 'Claude with effort',
      provider: 'anthropic',
      tier: 'fast',
      max_output_tokens: 64_000,
      context_window: 200_000,
      input_price_per_million: 1,
      output_price_per_million: 1,
      controls: { ...compatibleControls, temperature: { max: 1 }, stop: 'stop_sequences', reasoning_effort: ['low', 'high', 'ultra'] },
    },
    {
      id: 'gemini-3-pro-preview',
      label: 'Gemini 3 Pro',
      provider: 'google',
      tier: 'premium',
      max_output_tokens: 65_536,
      context_window: 1_048_576,
      input_price_per_million: 2,
      output_price_per_million: 12,
      controls: { ...compatibleControls, stop: 'stop_sequences', reasoning_effort: ['low', 'high'] },
    },
    {
      id: 'qwen3:8b',
      label: 'Qwen3 8B',
      provider: 'openai-compatible',
      tier: 'fast',
      max_output_tokens: 8192,
      context_window: 32_768,
      input_price_per_million: 0,
      output_price_per_million: 0,
      controls: compatibleControls,
    },
  ],
});
const model = (id: string): ChatModel => catalog.chatModel(id)!;

let fake: FakeModelServer;
let registry: ModelRegistry;

beforeAll(async () => {
  fake = await startFakeModelServer();
  registry = createModelRegistry(loadConfig(fake.env), catalog);
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.reset();
});

const session = (model_parameters: Record<string, unknown> = {}, temperature: number | null = null): SessionSettings => ({
  temperature,
  model_parameters,
});

/** Builds the settings, makes one real call and returns the body the fake server received. */
async function sent(id: string, s: SessionSettings) {
  const built = buildCallSettings(model(id), s);
  await generateText({ model: registry.languageModel(id), prompt: 'hi', ...built.settings, providerOptions: built.providerOptions, maxRetries: 0 });
  const request = fake.requests.at(-1)!;
  return { body: request.body, built };
}

const everything = {
  max_tokens: 1_000_000,
  seed: 7,
  stop: ['END', 'STOP'],
  logit_bias: { '50256': -100 },
  reasoning_effort: 'high',
  top_k: 40,
  top_p: 0.9,
  presence_penalty: 0.5,
  frequency_penalty: 0.25,
  thinking: true,
};

describe('OpenAI sampling models (gpt-4.1)', () => {
  it('sends every accepted setting under its Chat Completions name, capped', async () => {
    const { body, built } = await sent('gpt-4.1', session(everything, 2.5));
    expect(built.dropped.sort()).toEqual(['reasoning_effort', 'thinking', 'top_k']);
    expect(body).toMatchObject({
      model: 'gpt-4.1',
      max_tokens: 32_768, // capped at max_output_tokens
      temperature: 2, // capped at controls.temperature.max
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      seed: 7,
      logit_bias: { '50256': -100 },
    });
    // The stop parameter goes out under the name the catalog declares.
    expect(body[model('gpt-4.1').controls.stop as string]).toEqual(['END', 'STOP']);
    for (const key of ['top_k', 'reasoning_effort', 'max_completion_tokens', 'thinking']) expect(body).not.toHaveProperty(key);
  });

  it('defaults max_tokens and sends no sampling settings the session does not set', async () => {
    const { body, built } = await sent('gpt-4.1-mini', session());
    expect(built).toEqual({ settings: { maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS }, providerOptions: {}, dropped: [] });
    expect(Object.keys(body).sort()).toEqual(['max_tokens', 'messages', 'model']);
    expect(body.max_tokens).toBe(4096);
  });

  it('sends a single stop string as a one-element array', async () => {
    const { body } = await sent('gpt-4o-mini', session({ stop: 'Human:' }, 0));
    expect(body).toMatchObject({ stop: ['Human:'], temperature: 0 });
  });
});

describe('OpenAI reasoning models (o3, gpt-5)', () => {
  it('sends only max_completion_tokens and an allowed reasoning_effort', async () => {
    const { body, built } = await sent('o3', session(everything, 0.7));
    expect(built.dropped.sort()).toEqual(
      ['frequency_penalty', 'logit_bias', 'presence_penalty', 'seed', 'stop', 'temperature', 'thinking', 'top_k', 'top_p'].sort(),
    );
    expect(body).toMatchObject({ model: 'o3', reasoning_effort: 'high', max_completion_tokens: 100_000 });
    for (const key of ['temperature', 'top_p', 'stop', 'seed', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'max_tokens']) {
      expect(body).not.toHaveProperty(key);
    }
  });

  it('drops an effort level the model does not list', async () => {
    const { body, built } = await sent('o3', session({ reasoning_effort: 'minimal' }));
    expect(built.dropped).toEqual(['reasoning_effort']);
    expect(body).not.toHaveProperty('reasoning_effort');
    expect(body.max_completion_tokens).toBe(DEFAULT_REASONING_MAX_OUTPUT_TOKENS);
    const gpt5 = await sent('gpt-5-mini', session({ reasoning_effort: 'minimal', max_tokens: 500 }));
    expect(gpt5.built.dropped).toEqual([]);
    expect(gpt5.body).toMatchObject({ reasoning_effort: 'minimal', max_completion_tokens: 500 });
  });
});

describe('Anthropic Claude 4.x (temperature or top_p, thinking)', () => {
  it('sends temperature but not top_p when both are set, plus top_k and stop_sequences', async () => {
    const { body, built } = await sent('claude-sonnet-4-5', session({ top_p: 0.8, top_k: 20, stop: 'END', seed: 1, presence_penalty: 1, max_tokens: 100_000 }, 0.5));
    expect(built.dropped.sort()).toEqual(['presence_penalty', 'seed', 'top_p']);
    expect(body).toMatchObject({ model: 'claude-sonnet-4-5', temperature: 0.5, top_k: 20, max_tokens: 64_000 });
    expect(body[model('claude-sonnet-4-5').controls.stop as string]).toEqual(['END']);
    for (const key of ['top_p', 'seed', 'presence_penalty', 'thinking']) expect(body).not.toHaveProperty(key);
  });

  it('sends top_p alone when the session has no temperature, capped temperature otherwise', async () => {
    expect((await sent('claude-haiku-4-5', session({ top_p: 0.8 }))).body).toMatchObject({ top_p: 0.8 });
    const capped = await sent('claude-haiku-4-5', session({}, 1.8));
    expect(capped.body.temperature).toBe(1);
  });

  it('enables thinking with a budget, adds it to max_tokens and drops sampling settings', async () => {
    const { body, built } = await sent('claude-sonnet-4-5', session({ thinking: { budget_tokens: 5000 }, top_k: 5, max_tokens: 8000 }, 0.3));
    expect(built.dropped.sort()).toEqual(['temperature', 'top_k']);
    expect(built.providerOptions).toEqual({ anthropic: { thinking: { type: 'enabled', budgetTokens: 5000 } } });
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 5000 });
    // The SDK sends max_tokens = maxOutputTokens + budget; the budget stays below it.
    expect(body.max_tokens).toBe(13_000);
    for (const key of ['temperature', 'top_k', 'top_p']) expect(body).not.toHaveProperty(key);
  });

  it('keeps answer + budget within max_output_tokens and defaults the budget', async () => {
    // Asked for more than the cap holds: the budget yields first, the answer keeps half the cap.
    const full = await sent('claude-opus-4-1', session({ thinking: { budget_tokens: 50_000 }, max_tokens: 32_000 }));
    expect(full.body.thinking).toEqual({ type: 'enabled', budget_tokens: 16_000 });
    expect(full.body.max_tokens).toBe(32_000);
    const big = await sent('claude-sonnet-4-5', session({ thinking: { budget_tokens: 60_000 } }));
    expect(big.body.thinking.budget_tokens).toBe(64_000 - DEFAULT_REASONING_MAX_OUTPUT_TOKENS);
    expect(big.body.max_tokens).toBe(64_000);
    const small = await sent('claude-haiku-4-5', session({ thinking: { budget_tokens: 10 } }));
    expect(small.body.thinking.budget_tokens).toBe(1024); // Anthropic's minimum
    const defaulted = await sent('claude-haiku-4-5', session({ thinking: true }));
    expect(defaulted.body.thinking.budget_tokens).toBe(DEFAULT_THINKING_BUDGET);
    expect(defaulted.body.max_tokens).toBe(DEFAULT_REASONING_MAX_OUTPUT_TOKENS + DEFAULT_THINKING_BUDGET);
    const off = await sent('claude-haiku-4-5', session({ thinking: false }, 0.2));
    expect(off.built.dropped).toEqual([]);
    expect(off.body).not.toHaveProperty('thinking');
    expect(off.body.temperature).toBe(0.2);
  });
});

describe('Anthropic Claude 3.5 Haiku (no thinking)', () => {
  it('never sends thinking and still sends only one of temperature/top_p', async () => {
    const { body, built } = await sent('claude-3-5-haiku-latest', session({ thinking: { budget_tokens: 2000 }, top_p: 0.5, max_tokens: 50_000 }, 0.4));
    expect(built.dropped.sort()).toEqual(['thinking', 'top_p']);
    expect(body).toMatchObject({ temperature: 0.4, max_tokens: 8192 });
    expect(body).not.toHaveProperty('thinking');
    expect(body).not.toHaveProperty('top_p');
  });
});

describe('Google Gemini', () => {
  it('sends generationConfig fields', async () => {
    const { body, built } = await sent('gemini-2.5-flash', session({ top_p: 0.9, top_k: 32, seed: 3, stop: ['###'], max_tokens: 100_000, logit_bias: { '1': 1 } }, 1.2));
    expect(built.dropped).toEqual(['logit_bias']);
    expect(body.generationConfig).toEqual({ temperature: 1.2, topP: 0.9, topK: 32, seed: 3, stopSequences: ['###'], maxOutputTokens: 65_536 });
    // The catalog names the stop parameter in the API's snake_case form; the JSON API spells it
    // in camelCase (proto3 JSON accepts both).
    expect(model('gemini-2.5-flash').controls.stop).toBe('stop_sequences');
  });

  it('sends a thinking budget (added to maxOutputTokens) or dynamic thinking', async () => {
    const budget = await sent('gemini-2.5-pro', session({ thinking: { budget_tokens: 1000 }, max_tokens: 2000 }));
    expect(budget.body.generationConfig).toEqual({ maxOutputTokens: 3000, thinkingConfig: { thinkingBudget: 1000 } });
    const dynamic = await sent('gemini-2.5-flash-lite', session({ thinking: true }));
    expect(dynamic.body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: -1 });
    const capped = await sent('gemini-2.5-pro', session({ thinking: { budget_tokens: 100_000 } }));
    expect(capped.body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 32_768 });
  });

  it('never sends penalties to Gemini 2.5 (the SDK would strip them): they are dropped', async () => {
    const { body, built } = await sent('gemini-2.5-flash', session({ presence_penalty: 0.5, frequency_penalty: 0.5 }));
    expect(built.dropped).toEqual(expect.arrayContaining(['presence_penalty', 'frequency_penalty']));
    expect(built.settings).not.toHaveProperty('presencePenalty');
    expect(body.generationConfig).not.toHaveProperty('presencePenalty');
    expect(body.generationConfig).not.toHaveProperty('frequencyPenalty');
  });
});

describe('openai-compatible', () => {
  it('sends top_k, logit_bias and reasoning_effort in the body', async () => {
    const { body, built } = await sent('qwen3:8b', session({ ...everything, reasoning_effort: 'low', thinking: true }, 1.9));
    expect(built.dropped).toEqual(['thinking']);
    expect(built.providerOptions).toEqual({ openaiCompatible: { top_k: 40, logit_bias: { '50256': -100 }, reasoningEffort: 'low' } });
    expect(body).toMatchObject({
      model: 'qwen3:8b',
      max_tokens: 8192,
      temperature: 1.5,
      top_p: 0.9,
      top_k: 40,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      seed: 7,
      stop: ['END', 'STOP'],
      logit_bias: { '50256': -100 },
      reasoning_effort: 'low',
    });
  });
});

describe('reasoning_effort on Anthropic and Google', () => {
  it('sends Anthropic effort as output_config.effort, dropping levels the SDK does not know', async () => {
    const { body, built } = await sent('claude-effort-test', session({ reasoning_effort: 'high' }));
    expect(built.providerOptions).toEqual({ anthropic: { effort: 'high' } });
    expect(body.output_config).toEqual({ effort: 'high' });
    const unknown = buildCallSettings(model('claude-effort-test'), session({ reasoning_effort: 'ultra' }));
    expect(unknown.dropped).toEqual(['reasoning_effort']);
  });

  it('sends Gemini thinkingLevel', async () => {
    const { body } = await sent('gemini-3-pro-preview', session({ reasoning_effort: 'low' }));
    expect(body.generationConfig.thinkingConfig).toEqual({ thinkingLevel: 'low' });
  });
});

describe('buildCallSettings', () => {
  it('drops stored values that are no longer valid, and unknown keys', () => {
    const built = buildCallSettings(model('gpt-4.1'), session({ seed: 1.5, top_p: 3, stop: [], legacy: true, max_tokens: 10 }));
    expect(built.dropped.sort()).toEqual(['legacy', 'seed', 'top_p']);
    expect(built.settings).toEqual({ maxOutputTokens: 10 });
  });

  it('prefers temperature over top_p for temperature_or_top_p models and clamps negatives', () => {
    const custom: ChatModel = { ...model('gpt-4.1'), controls: { ...model('gpt-4.1').controls, temperature_or_top_p: true } };
    const built = buildCallSettings(custom, session({ top_p: 0.5 }, -1));
    expect(built.settings).toMatchObject({ temperature: 0 });
    expect(built.settings).not.toHaveProperty('topP');
    expect(built.dropped).toEqual(['top_p']);
  });

  it('drops thinking on Anthropic when the cap leaves no room for the minimum budget', () => {
    const tiny: ChatModel = { ...model('claude-sonnet-4-5'), max_output_tokens: 1024 };
    const built = buildCallSettings(tiny, session({ thinking: true }, 0.5));
    expect(built.dropped).toEqual(['thinking']);
    expect(built.settings).toEqual({ maxOutputTokens: 1024, temperature: 0.5 });
    const small: ChatModel = { ...model('claude-sonnet-4-5'), max_output_tokens: 1500 };
    const fits = buildCallSettings(small, session({ thinking: true }));
    expect(fits.providerOptions).toEqual({ anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } });
    expect(fits.settings.maxOutputTokens).toBe(476);
  });
});

describe('modelParametersSchema', () => {
  it('accepts the known keys within bounds', () => {
    expect(modelParametersSchema.parse(everything)).toEqual(everything);
    expect(modelParametersSchema.parse({ thinking: { budget_tokens: 2048 } })).toEqual({ thinking: { budget_tokens: 2048 } });
    expect(modelParametersSchema.parse({})).toEqual({});
  });

  it('rejects unknown keys with a clear message', () => {
    const result = modelParametersSchema.safeParse({ temprature: 1, foo: 2 });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.message).toBe(
      'Unknown model parameters: temprature, foo. Allowed: max_tokens, seed, stop, logit_bias, reasoning_effort, top_k, top_p, presence_penalty, frequency_penalty, thinking.',
    );
  });

  it.each([
    [{ max_tokens: 0 }],
    [{ max_tokens: 1.5 }],
    [{ seed: 2 ** 40 }],
    [{ stop: ['a', 'b', 'c', 'd', 'e'] }],
    [{ stop: 'x'.repeat(201) }],
    [{ stop: [''] }],
    [{ logit_bias: { hello: 5 } }],
    [{ logit_bias: { '1': 101 } }],
    [{ logit_bias: Object.fromEntries(Array.from({ length: 301 }, (_, i) => [String(i), 1])) }],
    [{ top_p: 1.1 }],
    [{ top_k: 0 }],
    [{ presence_penalty: -2.5 }],
    [{ frequency_penalty: 3 }],
    [{ thinking: { budget_tokens: 1000, extra: 1 } }],
    [{ thinking: 'yes' }],
    [{ reasoning_effort: '' }],
    [{ seed: null }],
  ])('rejects %j', (value) => {
    expect(modelParametersSchema.safeParse(value).success).toBe(false);
  });
});
