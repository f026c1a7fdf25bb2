import type { CallSettings, generateText } from 'ai';
import { z } from 'zod';
import type { ChatModel } from './models.schemas.js';

/*
 * Turns a chat session's settings (temperature + model_parameters) into AI SDK call settings for
 * one catalog model. The catalog's `controls` are the contract: a model is sent exactly the
 * settings they accept; everything else stays on the session and is reported in `dropped`.
 * The README in this folder lists every mapping and why.
 */

/** Answer allowance when the session sets no max_tokens (capped at the model's max_output_tokens). */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;
/** Same for models that may spend output tokens on hidden reasoning (effort levels or thinking). */
export const DEFAULT_REASONING_MAX_OUTPUT_TOKENS = 16_384;
/** Thinking budget for `thinking: true` on Anthropic (its API requires a budget). */
export const DEFAULT_THINKING_BUDGET = 2048;
/** Anthropic rejects budgets below this. */
export const MIN_ANTHROPIC_THINKING_BUDGET = 1024;
/** Largest Gemini 2.5 thinking budget (2.5 Pro); larger values are rejected. */
export const MAX_GOOGLE_THINKING_BUDGET = 32_768;
export const MAX_STOP_SEQUENCES = 4;
export const MAX_STOP_SEQUENCE_LENGTH = 200;
/** OpenAI accepts at most 300 logit_bias entries. */
export const MAX_LOGIT_BIAS_ENTRIES = 300;

const stopSequence = z.string().min(1).max(MAX_STOP_SEQUENCE_LENGTH);

/** Each known model_parameters key with its own bounds (also used to validate stored values). */
export const modelParameterFields = {
  max_tokens: z.int().positive().max(1_000_000),
  seed: z.int().min(-2_147_483_648).max(2_147_483_647),
  stop: z.union([stopSequence, z.array(stopSequence).max(MAX_STOP_SEQUENCES)]),
  logit_bias: z
    .record(z.string().regex(/^\d{1,9}$/, 'logit_bias keys must be token ids (digits)'), z.number().min(-100).max(100))
    .refine((bias) => Object.keys(bias).length <= MAX_LOGIT_BIAS_ENTRIES, {
      message: `logit_bias accepts at most ${MAX_LOGIT_BIAS_ENTRIES} entries`,
    }),
  reasoning_effort: z.string().min(1).max(32),
  top_k: z.int().min(1).max(1000),
  top_p: z.number().min(0).max(1),
  presence_penalty: z.number().min(-2).max(2),
  frequency_penalty: z.number().min(-2).max(2),
  thinking: z.union([z.boolean(), z.strictObject({ budget_tokens: z.int().min(1).max(200_000) })]),
} as const;

export type ModelParameterName = keyof typeof modelParameterFields;
const knownParameters = Object.keys(modelParameterFields) as ModelParameterName[];

/** The session's `model_parameters`: known keys only, each bounded. */
export const modelParametersSchema = z.strictObject(
  Object.fromEntries(knownParameters.map((key) => [key, modelParameterFields[key].optional()])) as {
    [K in ModelParameterName]: z.ZodOptional<(typeof modelParameterFields)[K]>;
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `Unknown model parameter${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}. Allowed: ${knownParameters.join(', ')}.`
        : undefined,
  },
);
export type ModelParameters = z.output<typeof modelParametersSchema>;

export type ProviderOptions = NonNullable<Parameters<typeof generateText>[0]['providerOptions']>;

/** The AI SDK call settings this module decides; spread them into streamText/generateText. */
export type ModelCallSettings = Pick<
  CallSettings,
  'temperature' | 'topP' | 'topK' | 'presencePenalty' | 'frequencyPenalty' | 'seed' | 'stopSequences'
> & { maxOutputTokens: number };

export interface BuiltCallSettings {
  settings: ModelCallSettings;
  /** Pass as `providerOptions`; empty when nothing provider-specific applies. */
  providerOptions: ProviderOptions;
  /** Session settings that are kept but not sent (names as on the session: `temperature`, `top_p`, ...). */
  dropped: string[];
}

export interface SessionSettings {
  temperature: number | null | undefined;
  model_parameters: Record<string, unknown>;
}

type OptionsFor = (key: string) => Record<string, unknown>;

/**
 * What differs per provider, one entry each: where the settings that are not plain AI SDK call
 * settings go (provider options), and which of them the provider refuses. The values each
 * accepts are the ones the SDKs' provider-option schemas accept; anything else would fail the call.
 */
interface ProviderMapping {
  /** Where a top_k goes: a call setting, a provider option, or nowhere (dropped). */
  topK: (topK: number, settings: Partial<ModelCallSettings>, optionsFor: OptionsFor) => boolean;
  /**
   * Turns thinking on (`budget` undefined: the provider's default) and returns the answer's
   * maxOutputTokens, or null when it cannot be on. Absent: thinking is never sent (dropped).
   */
  thinking?: (budget: number | undefined, maxOutputTokens: number, cap: number, optionsFor: OptionsFor) => number | null;
  /** With thinking on, temperature, top_p and top_k are refused. */
  thinkingExcludesSampling?: boolean;
  /** Treats every model as temperature-or-top_p (its SDK drops top_p when temperature is set). */
  temperatureOrTopP?: boolean;
  /** Sends a logit bias; absent: dropped. */
  logitBias?: (bias: Record<string, number>, optionsFor: OptionsFor) => void;
  /** Sends a reasoning effort the catalog allows; false when the provider cannot take it (dropped). */
  reasoningEffort: (effort: string, optionsFor: OptionsFor) => boolean;
}

const openaiEfforts = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
const anthropicEfforts = new Set(['low', 'medium', 'high', 'xhigh', 'max']);
const googleThinkingLevels = new Set(['minimal', 'low', 'medium', 'high']);

const setTopK = (topK: number, settings: Partial<ModelCallSettings>) => {
  settings.topK = topK;
  return true;
};

const PROVIDER_MAPPINGS: Record<ChatModel['provider'], ProviderMapping> = {
  openai: {
    topK: () => false,
    logitBias: (bias, optionsFor) => {
      optionsFor('openai').logitBias = bias;
    },
    reasoningEffort: (effort, optionsFor) => {
      if (!openaiEfforts.has(effort)) return false;
      optionsFor('openai').reasoningEffort = effort;
      return true;
    },
  },
  // openai-compatible reads `openaiCompatible`; unknown keys under it are copied into the body.
  'openai-compatible': {
    // The openai-compatible SDK ignores topK; servers that accept it (vLLM, Ollama) read `top_k`.
    topK: (topK, _settings, optionsFor) => {
      optionsFor('openaiCompatible').top_k = topK;
      return true;
    },
    logitBias: (bias, optionsFor) => {
      optionsFor('openaiCompatible').logit_bias = bias;
    },
    reasoningEffort: (effort, optionsFor) => {
      optionsFor('openaiCompatible').reasoningEffort = effort;
      return true;
    },
  },
  anthropic: {
    topK: setTopK,
    thinking: (requested, maxOutputTokens, cap, optionsFor) => {
      // The SDK sends max_tokens = maxOutputTokens + budget (so budget < max_tokens always holds);
      // keep that sum within the cap, shrinking the budget first so the answer keeps at least
      // half the cap (or what it asked for, if less).
      let budget = Math.max(requested ?? DEFAULT_THINKING_BUDGET, MIN_ANTHROPIC_THINKING_BUDGET);
      let answer = maxOutputTokens;
      if (answer + budget > cap) {
        const reserve = Math.min(answer, Math.floor(cap / 2));
        budget = Math.max(MIN_ANTHROPIC_THINKING_BUDGET, Math.min(budget, cap - reserve));
        answer = cap - budget;
      }
      if (answer < 1) return null; // the cap cannot hold the minimum budget plus an answer
      optionsFor('anthropic').thinking = { type: 'enabled', budgetTokens: budget };
      return answer;
    },
    // Anthropic refuses temperature/top_k changes with thinking on (the SDK strips them too).
    thinkingExcludesSampling: true,
    // @ai-sdk/anthropic drops top_p whenever temperature is set on a Claude model, so treat every
    // Anthropic model as temperature-or-top_p to keep `dropped` truthful.
    temperatureOrTopP: true,
    reasoningEffort: (effort, optionsFor) => {
      if (!anthropicEfforts.has(effort)) return false;
      optionsFor('anthropic').effort = effort;
      return true;
    },
  },
  google: {
    topK: setTopK,
    thinking: (requested, maxOutputTokens, cap, optionsFor) => {
      if (requested === undefined) {
        optionsFor('google').thinkingConfig = { thinkingBudget: -1 }; // dynamic thinking
        return maxOutputTokens;
      }
      const budget = Math.min(requested, MAX_GOOGLE_THINKING_BUDGET);
      optionsFor('google').thinkingConfig = { thinkingBudget: budget };
      // Gemini counts thoughts inside maxOutputTokens: add the budget so the answer keeps its room.
      return Math.min(maxOutputTokens + budget, cap);
    },
    reasoningEffort: (effort, optionsFor) => {
      if (!googleThinkingLevels.has(effort)) return false;
      const google = optionsFor('google');
      google.thinkingConfig = { ...(google.thinkingConfig as object | undefined), thinkingLevel: effort };
      return true;
    },
  },
};

/** Stored parameters, each re-validated on its own so one bad legacy value does not block the rest. */
function readParameters(raw: Record<string, unknown>, dropped: Set<string>): ModelParameters {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined || value === null) continue;
    const field = (modelParameterFields as Record<string, z.ZodType | undefined>)[key];
    const parsed = field?.safeParse(value);
    if (parsed?.success) out[key] = parsed.data;
    else dropped.add(key);
  }
  return out as ModelParameters;
}

export function buildCallSettings(model: ChatModel, session: SessionSettings): BuiltCallSettings {
  const { controls } = model;
  const mapping = PROVIDER_MAPPINGS[model.provider];
  const dropped = new Set<string>();
  const params = readParameters(session.model_parameters ?? {}, dropped);
  const settings: Partial<ModelCallSettings> = {};
  const providerOptions: Record<string, Record<string, unknown>> = {};
  const optionsFor = (key: string) => (providerOptions[key] ??= {});

  const cap = model.max_output_tokens;
  const reasons = controls.reasoning_effort.length > 0 || controls.thinking;
  const fallback = reasons ? DEFAULT_REASONING_MAX_OUTPUT_TOKENS : DEFAULT_MAX_OUTPUT_TOKENS;
  let maxOutputTokens = Math.min(params.max_tokens ?? fallback, cap);

  let temperature: number | undefined;
  if (typeof session.temperature === 'number' && Number.isFinite(session.temperature)) {
    if (controls.temperature) temperature = Math.min(Math.max(session.temperature, 0), controls.temperature.max);
    else dropped.add('temperature');
  }
  let topP: number | undefined;
  if (params.top_p !== undefined) {
    if (controls.top_p) topP = params.top_p;
    else dropped.add('top_p');
  }
  let topK: number | undefined;
  if (params.top_k !== undefined) {
    if (controls.top_k) topK = params.top_k;
    else dropped.add('top_k');
  }

  // Thinking decides whether sampling settings survive, so it goes first.
  let thinkingOn = false;
  if (params.thinking !== undefined) {
    const requested = params.thinking === true ? undefined : params.thinking === false ? null : params.thinking.budget_tokens;
    if (!controls.thinking || !mapping.thinking) {
      dropped.add('thinking');
    } else if (requested !== null) {
      // (`thinking: false` sends nothing: Claude does not think by default, and Gemini 2.5 Pro
      // rejects a zero budget, so the provider's default is the only safe "off".)
      const answer = mapping.thinking(requested, maxOutputTokens, cap, optionsFor);
      if (answer === null) {
        dropped.add('thinking');
      } else {
        thinkingOn = true;
        maxOutputTokens = answer;
      }
    }
  }
  if (thinkingOn && mapping.thinkingExcludesSampling) {
    if (temperature !== undefined) dropped.add('temperature');
    if (topP !== undefined) dropped.add('top_p');
    if (topK !== undefined) dropped.add('top_k');
    temperature = topP = topK = undefined;
  }
  // Temperature wins over top_p where the model takes one of them.
  if ((controls.temperature_or_top_p || mapping.temperatureOrTopP) && temperature !== undefined && topP !== undefined) {
    dropped.add('top_p');
    topP = undefined;
  }

  settings.maxOutputTokens = maxOutputTokens;
  if (temperature !== undefined) settings.temperature = temperature;
  if (topP !== undefined) settings.topP = topP;
  if (topK !== undefined && !mapping.topK(topK, settings, optionsFor)) dropped.add('top_k');

  for (const key of ['presence_penalty', 'frequency_penalty'] as const) {
    const value = params[key];
    if (value === undefined) continue;
    if (!controls.penalties) dropped.add(key);
    else if (key === 'presence_penalty') settings.presencePenalty = value;
    else settings.frequencyPenalty = value;
  }
  if (params.seed !== undefined) {
    if (controls.seed) settings.seed = params.seed;
    else dropped.add('seed');
  }
  if (params.stop !== undefined) {
    const stops = typeof params.stop === 'string' ? [params.stop] : params.stop;
    if (controls.stop === false) dropped.add('stop');
    else if (stops.length > 0) settings.stopSequences = stops;
  }

  if (params.logit_bias !== undefined) {
    if (!mapping.logitBias || !controls.penalties) dropped.add('logit_bias');
    else if (Object.keys(params.logit_bias).length > 0) mapping.logitBias(params.logit_bias, optionsFor);
  }

  if (params.reasoning_effort !== undefined) {
    const effort = params.reasoning_effort;
    if (!controls.reasoning_effort.includes(effort) || !mapping.reasoningEffort(effort, optionsFor)) dropped.add('reasoning_effort');
  }

  return {
    settings: settings as ModelCallSettings,
    providerOptions: providerOptions as ProviderOptions,
    dropped: [...dropped],
  };
}
