/**
 * Public API of the documents module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). The document response shape and its mapper (knowledge bases list their documents).
 */
export { toDocumentOut } from './documents.mapper.js';
export { documentOut, type DocumentOut } from './documents.schemas.js';
/** The unit a document's page numbers count (page, sheet, slide, chapter). */
export { type PageUnit } from './documents.table.js';
/** Which documents a viewer sees (knowledge bases filter their lists by it). */
export { visibleDocumentIds } from './documents.repo.js';
/**
 * The document and ingestion-task store, for the ingestion module (which fills in text, chunks
 * and task states of the documents this module stores).
 */
export * as documentStore from './documents.repo.js';
/** Languages of full-text search: detection at ingestion, configurations and CJK segmentation for indexing and queries. */
export { detectLanguage, FALLBACK_CONFIG, KNOWN_CONFIGS, searchConfigFor, segmentCjk } from './search-language.js';
