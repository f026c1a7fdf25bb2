/**
 * Public API of the documents module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). The document response shape and its mapper (knowledge bases list their documents).
 */
export { toDocumentOut } from './documents.mapper.js';
export { documentOut, type DocumentOut } from './documents.schemas.js';
