/**
 * Public API of the knowledge-bases module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). The attachments of documents to knowledge bases and the read rule, which
 * the documents module (below this one) receives through its factory in src/deps.ts.
 */
import { addDocuments, documentInReadableKb, findWritableKbs, kbIdsOfDocuments, removeDocuments } from './knowledge-bases.repo.js';

export const knowledgeBaseLinks = { documentInReadableKb, findWritableKbs, addDocuments, removeDocuments, kbIdsOfDocuments };
