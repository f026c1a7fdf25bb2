/**
 * What the `search_knowledge_base` tool needs from the knowledge module: whether a chat has
 * knowledge bases attached, and a search over their chunks. The documents module provides the
 * real implementation; `noKnowledge` stands in where none is wired.
 */
export interface KnowledgeHit {
  chunk_id: string;
  document_id: string;
  document_name: string;
  content: string;
  score: number;
  page?: number | null;
  /** What `page` counts in its document's format (set at ingestion); absent or null: a page. */
  page_unit?: 'page' | 'sheet' | 'slide' | 'chapter' | null;
  /** The reranker's relevance score (RERANK_MODEL set and it answered); hits are then in its order. */
  rerank_score?: number;
}

export interface KnowledgeSearch {
  hasKnowledge(chat: { id: string; workspaceId: string }): Promise<boolean>;
  search(input: { workspaceId: string; chatId: string; query: string; limit: number }): Promise<KnowledgeHit[]>;
}

export const noKnowledge: KnowledgeSearch = {
  hasKnowledge: async () => false,
  search: async () => [],
};

/** A knowledge passage a reply cites (stored with the message by the messages module). */
export interface MessageSource {
  document_id: string;
  document_name: string;
  chunk_id: string;
  score: number;
  /**
   * Where in the document the passage is: the 1-based page (PDF), sheet (XLSX, ODS), slide (PPTX,
   * ODP) or chapter (EPUB) of its chunk. Absent for formats without pages (and in replies saved
   * before it was recorded).
   */
  page?: number;
  /** The reranker's relevance score, when RERANK_MODEL is set and it answered (`score` stays the fused one). */
  rerank_score?: number;
}
