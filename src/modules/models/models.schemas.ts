import { z } from 'zod';

export const modelTiers = ['fast', 'standard', 'premium'] as const;
export type ModelTier = (typeof modelTiers)[number];
export const modelProviders = ['openai', 'anthropic', 'google', 'openai-compatible'] as const;
export type ModelProvider = (typeof modelProviders)[number];

/** The settings a model accepts; chat requests send it nothing else. */
export const modelControls = z.object({
  temperature: z.object({ max: z.number().positive() }).nullable(),
  top_p: z.boolean(),
  top_k: z.boolean(),
  penalties: z.boolean(),
  seed: z.boolean(),
  /** Name of the stop parameter (`stop`, `stop_sequences`) or false when unsupported. */
  stop: z.union([z.string().min(1), z.literal(false)]),
  reasoning_effort: z.array(z.string().min(1)),
  thinking: z.boolean(),
  temperature_or_top_p: z.boolean(),
});
export type ModelControls = z.output<typeof modelControls>;

export const chatModel = z.object({
  id: z.string().min(1).max(100),
  label: z.string().min(1).max(100),
  provider: z.enum(modelProviders),
  tier: z.enum(modelTiers),
  max_output_tokens: z.number().int().positive(),
  context_window: z.number().int().positive(),
  input_price_per_million: z.number().nonnegative(),
  output_price_per_million: z.number().nonnegative(),
  supports_images: z.boolean().default(false),
  supports_tools: z.boolean().default(true),
  controls: modelControls,
});
export type ChatModel = z.output<typeof chatModel>;

export const embeddingModel = z.object({
  id: z.string().min(1).max(100),
  provider: z.enum(modelProviders),
  dimensions: z.number().int().positive(),
  input_price_per_million: z.number().nonnegative(),
});
export type EmbeddingModel = z.output<typeof embeddingModel>;

export const transcriptionModel = z.object({
  id: z.string().min(1).max(100),
  provider: z.enum(modelProviders),
  price_per_minute: z.number().nonnegative(),
});
export type TranscriptionModel = z.output<typeof transcriptionModel>;

/** Shape of MODEL_CATALOG_FILE: entries with a known id replace it, new ids are added. */
export const catalogFile = z.object({
  models: z.array(chatModel).default([]),
  embedding_models: z.array(embeddingModel).default([]),
  transcription_models: z.array(transcriptionModel).default([]),
});
export type CatalogFile = z.input<typeof catalogFile>;

/** One entry of GET /api/workspaces/{id}/ai-models/. */
export const aiModelOut = z.object({
  id: z.string(),
  label: z.string(),
  provider: z.string(),
  tier: z.string(),
  included: z.boolean(),
  is_default: z.boolean(),
  max_output_tokens: z.number().int(),
  context_window: z.number().int(),
  input_price_per_million: z.number(),
  output_price_per_million: z.number(),
  supports_images: z.boolean(),
  controls: modelControls,
});
