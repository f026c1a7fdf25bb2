/** Message rows as the API shows them. */
import type * as repo from './messages.repo.js';
import { type MessageOut } from './messages.schemas.js';

export function toMessageOut(row: repo.MessageRow): MessageOut {
  return {
    id: row.id,
    session: row.sessionId,
    role: row.role,
    content: row.content,
    author: row.authorId,
    parent: row.parentId,
    attachments: row.attachments.map(({ id, name, content_type, size }) => ({ id, name, content_type, size })),
    rating: row.rating,
    reason: row.reason,
    stopped: row.stopped,
    usage: row.usage,
    ai_model: row.aiModel,
    sources: row.sources,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** The `done` event's data: the same whether streamed live, replayed, or rebuilt from the saved reply. */
export function doneEventData(reply: repo.MessageRow) {
  return { message_id: reply.id, user_message_id: reply.parentId, usage: reply.usage, stopped: reply.stopped, sources: reply.sources };
}
