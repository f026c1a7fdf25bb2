import type { DocumentRow, TaskRow } from './documents.repo.js';
import type { DocumentOut, TaskOut } from './documents.schemas.js';

export function toDocumentOut(row: DocumentRow, knowledgeBaseIds: string[]): DocumentOut {
  return {
    id: row.id,
    workspace: row.workspaceId,
    name: row.name,
    content_type: row.contentType,
    size: row.size,
    source_kind: row.sourceKind,
    source_url: row.sourceUrl,
    processing_status: row.processingStatus,
    language: row.language,
    uploaded_by: row.uploadedBy,
    knowledge_base_ids: knowledgeBaseIds,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export function toTaskOut(row: TaskRow): TaskOut {
  return {
    id: row.id,
    document: row.documentId,
    task_id: row.taskId,
    status: row.status,
    error_message: row.errorMessage,
    created_at: row.createdAt.toISOString(),
  };
}
