import type { AnthropicProvider } from '@ai-sdk/anthropic';
import type { GoogleGenerativeAIProvider } from '@ai-sdk/google';
import type { OpenAIProvider } from '@ai-sdk/openai';
import type { OpenAICompatibleProvider } from '@ai-sdk/openai-compatible';
import type { EmbeddingModel, LanguageModel, TranscriptionModel } from 'ai';
import type { Config } from '../../config/env.js';
import { fieldError, ServiceUnavailableError } from '../../platform/errors.js';
import { once } from '../../platform/once.js';
import type { ProviderOptions } from './call-settings.js';
import { providerFetch } from './provider-fetch.js';
import type { ModelCatalog } from './catalog.js';
import {
  type EmbeddingModel as EmbeddingModelEntry,
  type ModelProvider,
  modelProviders,
  type TranscriptionModel as TranscriptionModelEntry,
} from './models.schemas.js';

/*
 * The one place that builds AI SDK model objects. Provider clients are created from the config
 * (never from process.env directly) once per registry and reused; model objects are cheap views.
 *
 * The provider packages are loaded when a model is first called, not when the service starts:
 * with the AI SDK they are a fifth of the code a start loads (~0.1 s of it, bench:start). So the
 * registry hands out models of the AI SDK's model specification that load their provider on
 * their first call (`lazyLanguageModel` and its siblings) and then delegate to the provider's
 * own model; `preloadModelSdks` loads them ahead, once the service listens (server.ts).
 */

export type ProviderConfig = Pick<
  Config,
  | 'OPENAI_API_KEY'
  | 'OPENAI_BASE_URL'
  | 'ANTHROPIC_API_KEY'
  | 'ANTHROPIC_BASE_URL'
  | 'GOOGLE_GENERATIVE_AI_API_KEY'
  | 'GOOGLE_GENERATIVE_AI_BASE_URL'
  | 'OPENAI_COMPATIBLE_BASE_URL'
  | 'OPENAI_COMPATIBLE_API_KEY'
>;

/** Model objects only: a plain string would be resolved through the AI Gateway. */
export type ChatLanguageModel = Exclude<LanguageModel, string>;
export type TextEmbeddingModel = Exclude<EmbeddingModel, string>;
export type SpeechToTextModel = Exclude<TranscriptionModel, string>;

type LanguageModelV3 = Extract<ChatLanguageModel, { specificationVersion: 'v3' }>;
type EmbeddingModelV3 = Extract<TextEmbeddingModel, { specificationVersion: 'v3' }>;
type TranscriptionModelV3 = Extract<SpeechToTextModel, { specificationVersion: 'v3' }>;

/** The provider packages, each loaded once, when first needed. */
const sdk = {
  openai: once(() => import('@ai-sdk/openai')),
  anthropic: once(() => import('@ai-sdk/anthropic')),
  google: once(() => import('@ai-sdk/google')),
  compatible: once(() => import('@ai-sdk/openai-compatible')),
};

/**
 * The AI SDK (`streamText`, `embedMany`, `generateText`, `experimental_transcribe`), loaded once,
 * at the first model call or by `preloadModelSdks`, for every module that calls a model: an
 * `import()` at each call would resolve the module again each time.
 */
export const aiSdk = once(() => import('ai'));

/** Loads the AI SDK and its provider packages ahead of the first model call (after start-up). */
export async function preloadModelSdks(): Promise<void> {
  await Promise.all([aiSdk(), sdk.openai(), sdk.anthropic(), sdk.google(), sdk.compatible()]);
}

/**
 * A chat model whose provider model is made on its first call. `provider` is the name the
 * provider's own model reports (tests compare the two), known before it is loaded.
 */
function lazyLanguageModel(provider: string, modelId: string, load: () => Promise<LanguageModelV3>): LanguageModelV3 {
  const model = once(load);
  return {
    specificationVersion: 'v3',
    provider,
    modelId,
    get supportedUrls() {
      return model().then((m) => m.supportedUrls);
    },
    doGenerate: async (options) => (await model()).doGenerate(options),
    doStream: async (options) => (await model()).doStream(options),
  };
}

function lazyEmbeddingModel(provider: string, modelId: string, load: () => Promise<EmbeddingModelV3>): EmbeddingModelV3 {
  const model = once(load);
  return {
    specificationVersion: 'v3',
    provider,
    modelId,
    get maxEmbeddingsPerCall() {
      return model().then((m) => m.maxEmbeddingsPerCall);
    },
    get supportsParallelCalls() {
      return model().then((m) => m.supportsParallelCalls);
    },
    doEmbed: async (options) => (await model()).doEmbed(options),
  };
}

function lazyTranscriptionModel(provider: string, modelId: string, load: () => Promise<TranscriptionModelV3>): TranscriptionModelV3 {
  const model = once(load);
  return {
    specificationVersion: 'v3',
    provider,
    modelId,
    doGenerate: async (options) => (await model()).doGenerate(options),
  };
}

export interface ResolvedEmbeddingModel {
  model: TextEmbeddingModel;
  entry: EmbeddingModelEntry;
}

export interface ResolvedTranscriptionModel {
  model: SpeechToTextModel;
  entry: TranscriptionModelEntry;
  /** Pass to `experimental_transcribe`; makes OpenAI's whisper return language and duration. */
  providerOptions: ProviderOptions;
}

export interface ModelRegistry {
  /** The chat model for a catalog id. Throws `unknown_model` (400) or `model_provider_not_configured` (503). */
  languageModel(modelId: string): ChatLanguageModel;
  /** `provider:model`, as in EMBEDDING_MODEL. The model must be in the catalog (for its dimensions and price). */
  embeddingModel(spec: string): ResolvedEmbeddingModel;
  /** `provider:model`, as in TRANSCRIPTION_MODEL. The model must be in the catalog (for its price). */
  transcriptionModel(spec: string): ResolvedTranscriptionModel;
}

const defaultBaseUrls = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta',
} as const;

/**
 * The OpenAI and Anthropic clients refuse to send a request without a key; a server reached
 * through a base URL alone (a local proxy, vLLM) usually ignores it, so send a placeholder.
 */
const KEYLESS = 'not-configured';

const settingNames: Record<ModelProvider, string> = {
  openai: 'OPENAI_API_KEY or OPENAI_BASE_URL',
  anthropic: 'ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY or GOOGLE_GENERATIVE_AI_BASE_URL',
  'openai-compatible': 'OPENAI_COMPATIBLE_BASE_URL',
};

/** Whether the environment configures a provider: a key or a base URL (openai-compatible needs its base URL). */
export function providerConfigured(config: ProviderConfig, provider: ModelProvider): boolean {
  switch (provider) {
    case 'openai':
      return Boolean(config.OPENAI_API_KEY || config.OPENAI_BASE_URL);
    case 'anthropic':
      return Boolean(config.ANTHROPIC_API_KEY || config.ANTHROPIC_BASE_URL);
    case 'google':
      return Boolean(config.GOOGLE_GENERATIVE_AI_API_KEY || config.GOOGLE_GENERATIVE_AI_BASE_URL);
    case 'openai-compatible':
      return Boolean(config.OPENAI_COMPATIBLE_BASE_URL);
  }
}

/** Splits `provider:model` (the model part may itself contain colons, as Ollama tags do). */
export function parseModelSpec(spec: string): { provider: ModelProvider; modelId: string } {
  const at = spec.indexOf(':');
  const provider = spec.slice(0, at);
  const modelId = spec.slice(at + 1);
  if (at <= 0 || !modelId || !(modelProviders as readonly string[]).includes(provider)) {
    throw new ServiceUnavailableError(
      `Model setting '${spec}' must look like provider:model with provider one of ${modelProviders.join(', ')}.`,
      'model_not_configured',
    );
  }
  return { provider: provider as ModelProvider, modelId };
}

function notConfigured(provider: ModelProvider, what: string): ServiceUnavailableError {
  return new ServiceUnavailableError(
    `The ${provider} model provider is not configured (needed for ${what}): set ${settingNames[provider]}.`,
    'model_provider_not_configured',
  );
}

/*
 * Every client fetches through providerFetch (provider-fetch.ts). The SDK also hands a client's
 * custom fetch the URL downloads its image models make (with `redirect: 'manual'`, which
 * providerFetch passes to the global fetch without the SDK's own address check): no image model
 * is created here; one added later must keep the SDK's guarded download (no custom fetch).
 */
export function createModelRegistry(config: ProviderConfig, catalog: ModelCatalog): ModelRegistry {
  const ensureConfigured = (provider: ModelProvider, what: string) => {
    if (!providerConfigured(config, provider)) throw notConfigured(provider, what);
  };
  const openaiClient = once(
    async (): Promise<OpenAIProvider> =>
      (await sdk.openai()).createOpenAI({
        baseURL: config.OPENAI_BASE_URL ?? defaultBaseUrls.openai,
        apiKey: config.OPENAI_API_KEY ?? KEYLESS,
        fetch: providerFetch,
      }),
  );
  const anthropicClient = once(
    async (): Promise<AnthropicProvider> =>
      (await sdk.anthropic()).createAnthropic({
        baseURL: config.ANTHROPIC_BASE_URL ?? defaultBaseUrls.anthropic,
        apiKey: config.ANTHROPIC_API_KEY ?? KEYLESS,
        fetch: providerFetch,
      }),
  );
  const googleClient = once(
    async (): Promise<GoogleGenerativeAIProvider> =>
      (await sdk.google()).createGoogleGenerativeAI({
        baseURL: config.GOOGLE_GENERATIVE_AI_BASE_URL ?? defaultBaseUrls.google,
        apiKey: config.GOOGLE_GENERATIVE_AI_API_KEY ?? KEYLESS,
        fetch: providerFetch,
      }),
  );
  const compatibleClient = once(
    async (): Promise<OpenAICompatibleProvider> =>
      (await sdk.compatible()).createOpenAICompatible({
        name: 'openai-compatible',
        baseURL: config.OPENAI_COMPATIBLE_BASE_URL!,
        apiKey: config.OPENAI_COMPATIBLE_API_KEY,
        fetch: providerFetch,
        // Ask for the final usage chunk when streaming (vLLM, Ollama, LiteLLM and LM Studio send it).
        includeUsage: true,
      }),
  );
  // openai-compatible has no transcription client; its servers speak OpenAI's audio API.
  const compatibleAudioClient = once(
    async (): Promise<OpenAIProvider> =>
      (await sdk.openai()).createOpenAI({
        name: 'openai-compatible',
        baseURL: config.OPENAI_COMPATIBLE_BASE_URL!,
        apiKey: config.OPENAI_COMPATIBLE_API_KEY ?? KEYLESS,
        fetch: providerFetch,
      }),
  );

  return {
    languageModel(modelId) {
      const entry = catalog.chatModel(modelId);
      if (!entry) throw fieldError('ai_model', `Unknown model '${modelId}'.`, 'unknown_model');
      ensureConfigured(entry.provider, `model ${modelId}`);
      switch (entry.provider) {
        case 'openai':
          // Chat Completions, not the Responses API, so any OpenAI-compatible server is a drop-in.
          return lazyLanguageModel('openai.chat', modelId, async () => (await openaiClient()).chat(modelId));
        case 'anthropic':
          return lazyLanguageModel('anthropic.messages', modelId, async () => (await anthropicClient()).messages(modelId));
        case 'google':
          return lazyLanguageModel('google.generative-ai', modelId, async () => (await googleClient()).chat(modelId));
        case 'openai-compatible':
          return lazyLanguageModel('openai-compatible.chat', modelId, async () => (await compatibleClient()).chatModel(modelId));
      }
    },

    embeddingModel(spec) {
      const { provider, modelId } = parseModelSpec(spec);
      const entry = catalog.embeddingModel(modelId);
      if (!entry) {
        throw new ServiceUnavailableError(
          `Embedding model '${modelId}' is not in the model catalog; add it (with its dimensions) through MODEL_CATALOG_FILE.`,
          'model_not_configured',
        );
      }
      ensureConfigured(provider, `embedding model ${spec}`);
      switch (provider) {
        case 'openai':
          return { model: lazyEmbeddingModel('openai.embedding', modelId, async () => (await openaiClient()).embedding(modelId)), entry };
        case 'google':
          return { model: lazyEmbeddingModel('google.generative-ai', modelId, async () => (await googleClient()).embedding(modelId)), entry };
        case 'openai-compatible':
          return {
            model: lazyEmbeddingModel('openai-compatible.embedding', modelId, async () => (await compatibleClient()).embeddingModel(modelId)),
            entry,
          };
        case 'anthropic':
          throw new ServiceUnavailableError('Anthropic offers no embedding models; set EMBEDDING_MODEL to another provider.', 'model_not_configured');
      }
    },

    transcriptionModel(spec) {
      const { provider, modelId } = parseModelSpec(spec);
      const entry = catalog.transcriptionModel(modelId);
      if (!entry) {
        throw new ServiceUnavailableError(
          `Transcription model '${modelId}' is not in the model catalog; add it (with its price) through MODEL_CATALOG_FILE.`,
          'model_not_configured',
        );
      }
      ensureConfigured(provider, `transcription model ${spec}`);
      // The OpenAI client asks for verbose_json (language, duration) only when openai options are present.
      const openaiOptions: ProviderOptions = { openai: {} };
      switch (provider) {
        case 'openai':
          return {
            model: lazyTranscriptionModel('openai.transcription', modelId, async () => (await openaiClient()).transcription(modelId)),
            entry,
            providerOptions: openaiOptions,
          };
        case 'openai-compatible':
          return {
            model: lazyTranscriptionModel('openai-compatible.transcription', modelId, async () => (await compatibleAudioClient()).transcription(modelId)),
            entry,
            providerOptions: openaiOptions,
          };
        case 'google':
          return {
            model: lazyTranscriptionModel('google.generative-ai.transcription', modelId, async () => (await googleClient()).transcription(modelId)),
            entry,
            providerOptions: {},
          };
        case 'anthropic':
          throw new ServiceUnavailableError('Anthropic offers no transcription models; set TRANSCRIPTION_MODEL to another provider.', 'model_not_configured');
      }
    },
  };
}
