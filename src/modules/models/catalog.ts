import { readFileSync } from 'node:fs';
import { describeIssues } from '../../platform/zod-issues.js';
import { builtInCatalog } from './catalog.data.js';
import {
  type CatalogFile,
  catalogFile,
  type ChatModel,
  type EmbeddingModel,
  type TranscriptionModel,
} from './models.schemas.js';

export interface ModelCatalog {
  /** Chat models in catalog order. */
  readonly models: readonly ChatModel[];
  chatModel(id: string): ChatModel | undefined;
  embeddingModel(id: string): EmbeddingModel | undefined;
  transcriptionModel(id: string): TranscriptionModel | undefined;
}

function mergeById<T extends { id: string }>(base: T[], extra: T[]): T[] {
  const merged = new Map(base.map((entry) => [entry.id, entry]));
  for (const entry of extra) merged.set(entry.id, entry);
  return [...merged.values()];
}

export function createCatalog(extra?: CatalogFile): ModelCatalog {
  const base = catalogFile.parse(builtInCatalog);
  const more = catalogFile.parse(extra ?? {});
  const models = mergeById(base.models, more.models);
  const embeddings = mergeById(base.embedding_models, more.embedding_models);
  const transcriptions = mergeById(base.transcription_models, more.transcription_models);
  const index = <T extends { id: string }>(list: T[]) => new Map(list.map((m) => [m.id, m]));
  const chatIndex = index(models);
  const embeddingIndex = index(embeddings);
  const transcriptionIndex = index(transcriptions);
  return {
    models,
    chatModel: (id) => chatIndex.get(id),
    embeddingModel: (id) => embeddingIndex.get(id),
    transcriptionModel: (id) => transcriptionIndex.get(id),
  };
}

/** The built-in catalog extended by MODEL_CATALOG_FILE (JSON) when it is set. */
export function loadCatalog(file: string | undefined): ModelCatalog {
  if (!file) return createCatalog();
  const parsed = catalogFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    throw new Error(`MODEL_CATALOG_FILE ${file} is invalid: ${describeIssues(parsed.error.issues)}`);
  }
  return createCatalog(parsed.data);
}

/** Cost in USD of a call with the given token counts. */
export function tokenCost(model: Pick<ChatModel, 'input_price_per_million' | 'output_price_per_million'>, inputTokens: number, outputTokens: number): number {
  return (inputTokens * model.input_price_per_million + outputTokens * model.output_price_per_million) / 1_000_000;
}
