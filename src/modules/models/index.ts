/**
 * Public API of the models module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). The model catalog and prices, provider resolution (`ModelRegistry`), model specs and tiers,
 * and the provider call settings built from a chat's parameters.
 */
export { DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_REASONING_MAX_OUTPUT_TOKENS, buildCallSettings, modelParametersSchema, type BuiltCallSettings, type ProviderOptions } from './call-settings.js';
export { tokenCost, type ModelCatalog } from './catalog.js';
export { modelTiers, type ChatModel } from './models.schemas.js';
export { type PlanModelRules } from './models.service.js';
export { aiSdk, parseModelSpec, preloadModelSdks, type ChatLanguageModel, type ModelRegistry, type ResolvedTranscriptionModel } from './providers.js';
