import type { CatalogFile, ModelControls } from './models.schemas.js';

/*
 * The built-in model catalog. Prices are USD per million tokens as published by each provider;
 * operators extend or override entries with MODEL_CATALOG_FILE. `controls` must match what the
 * provider's API accepts, because chat requests send a model nothing else.
 */

const openaiSampling: ModelControls = {
  temperature: { max: 2 },
  top_p: true,
  top_k: false,
  penalties: true,
  seed: true,
  stop: 'stop',
  reasoning_effort: [],
  thinking: false,
  temperature_or_top_p: false,
};

// OpenAI reasoning models reject temperature, top_p, penalties and stop.
const openaiReasoning = (levels: string[]): ModelControls => ({
  temperature: null,
  top_p: false,
  top_k: false,
  penalties: false,
  seed: false,
  stop: false,
  reasoning_effort: levels,
  thinking: false,
  temperature_or_top_p: false,
});

// Claude 4.x models refuse requests that set both temperature and top_p.
const anthropic = (thinking: boolean, temperatureOrTopP: boolean): ModelControls => ({
  temperature: { max: 1 },
  top_p: true,
  top_k: true,
  penalties: false,
  seed: false,
  stop: 'stop_sequences',
  reasoning_effort: [],
  thinking,
  temperature_or_top_p: temperatureOrTopP,
});

// @ai-sdk/google strips presence/frequency penalties for Gemini 2.5 models, so none are offered.
const gemini: ModelControls = {
  temperature: { max: 2 },
  top_p: true,
  top_k: true,
  penalties: false,
  seed: true,
  stop: 'stop_sequences',
  reasoning_effort: [],
  thinking: true,
  temperature_or_top_p: false,
};

export const builtInCatalog: CatalogFile = {
  models: [
    // OpenAI
    { id: 'gpt-4.1-nano', label: 'GPT-4.1 nano', provider: 'openai', tier: 'fast', max_output_tokens: 32_768, context_window: 1_047_576, input_price_per_million: 0.1, output_price_per_million: 0.4, supports_images: true, controls: openaiSampling },
    { id: 'gpt-4.1-mini', label: 'GPT-4.1 mini', provider: 'openai', tier: 'fast', max_output_tokens: 32_768, context_window: 1_047_576, input_price_per_million: 0.4, output_price_per_million: 1.6, supports_images: true, controls: openaiSampling },
    { id: 'gpt-4o-mini', label: 'GPT-4o mini', provider: 'openai', tier: 'fast', max_output_tokens: 16_384, context_window: 128_000, input_price_per_million: 0.15, output_price_per_million: 0.6, supports_images: true, controls: openaiSampling },
    { id: 'gpt-4.1', label: 'GPT-4.1', provider: 'openai', tier: 'standard', max_output_tokens: 32_768, context_window: 1_047_576, input_price_per_million: 2, output_price_per_million: 8, supports_images: true, controls: openaiSampling },
    { id: 'gpt-4o', label: 'GPT-4o', provider: 'openai', tier: 'standard', max_output_tokens: 16_384, context_window: 128_000, input_price_per_million: 2.5, output_price_per_million: 10, supports_images: true, controls: openaiSampling },
    { id: 'gpt-5-mini', label: 'GPT-5 mini', provider: 'openai', tier: 'standard', max_output_tokens: 128_000, context_window: 400_000, input_price_per_million: 0.25, output_price_per_million: 2, supports_images: true, controls: openaiReasoning(['minimal', 'low', 'medium', 'high']) },
    { id: 'o4-mini', label: 'o4-mini', provider: 'openai', tier: 'standard', max_output_tokens: 100_000, context_window: 200_000, input_price_per_million: 1.1, output_price_per_million: 4.4, supports_images: true, controls: openaiReasoning(['low', 'medium', 'high']) },
    { id: 'gpt-5', label: 'GPT-5', provider: 'openai', tier: 'premium', max_output_tokens: 128_000, context_window: 400_000, input_price_per_million: 1.25, output_price_per_million: 10, supports_images: true, controls: openaiReasoning(['minimal', 'low', 'medium', 'high']) },
    { id: 'o3', label: 'o3', provider: 'openai', tier: 'premium', max_output_tokens: 100_000, context_window: 200_000, input_price_per_million: 2, output_price_per_million: 8, supports_images: true, controls: openaiReasoning(['low', 'medium', 'high']) },
    // Anthropic
    { id: 'claude-3-5-haiku-latest', label: 'Claude 3.5 Haiku', provider: 'anthropic', tier: 'fast', max_output_tokens: 8_192, context_window: 200_000, input_price_per_million: 0.8, output_price_per_million: 4, supports_images: true, controls: anthropic(false, false) },
    { id: 'claude-haiku-4-5', label: 'Claude Haiku 4.5', provider: 'anthropic', tier: 'fast', max_output_tokens: 64_000, context_window: 200_000, input_price_per_million: 1, output_price_per_million: 5, supports_images: true, controls: anthropic(true, true) },
    { id: 'claude-sonnet-4-5', label: 'Claude Sonnet 4.5', provider: 'anthropic', tier: 'standard', max_output_tokens: 64_000, context_window: 200_000, input_price_per_million: 3, output_price_per_million: 15, supports_images: true, controls: anthropic(true, true) },
    { id: 'claude-opus-4-1', label: 'Claude Opus 4.1', provider: 'anthropic', tier: 'premium', max_output_tokens: 32_000, context_window: 200_000, input_price_per_million: 15, output_price_per_million: 75, supports_images: true, controls: anthropic(true, true) },
    // Google
    { id: 'gemini-2.5-flash-lite', label: 'Gemini 2.5 Flash-Lite', provider: 'google', tier: 'fast', max_output_tokens: 65_536, context_window: 1_048_576, input_price_per_million: 0.1, output_price_per_million: 0.4, supports_images: true, controls: gemini },
    { id: 'gemini-2.5-flash', label: 'Gemini 2.5 Flash', provider: 'google', tier: 'standard', max_output_tokens: 65_536, context_window: 1_048_576, input_price_per_million: 0.3, output_price_per_million: 2.5, supports_images: true, controls: gemini },
    { id: 'gemini-2.5-pro', label: 'Gemini 2.5 Pro', provider: 'google', tier: 'premium', max_output_tokens: 65_536, context_window: 1_048_576, input_price_per_million: 1.25, output_price_per_million: 10, supports_images: true, controls: gemini },
  ],
  embedding_models: [
    { id: 'text-embedding-3-small', provider: 'openai', dimensions: 1536, input_price_per_million: 0.02 },
    { id: 'text-embedding-3-large', provider: 'openai', dimensions: 3072, input_price_per_million: 0.13 },
    { id: 'gemini-embedding-001', provider: 'google', dimensions: 3072, input_price_per_million: 0.15 },
  ],
  transcription_models: [
    { id: 'whisper-1', provider: 'openai', price_per_minute: 0.006 },
    { id: 'gpt-4o-transcribe', provider: 'openai', price_per_minute: 0.006 },
    { id: 'gpt-4o-mini-transcribe', provider: 'openai', price_per_minute: 0.003 },
  ],
};
