import { z } from 'zod';
import { pathId } from '../../platform/ids.js';
import { agentTaskStatuses } from './messages.table.js';

const timestamp = z.iso.datetime({ offset: true });

export const chatPathParams = z.object({ ws: pathId, session: pathId });
export const messagePathParams = z.object({ ws: pathId, session: pathId, id: pathId });
export const taskPathParams = z.object({ ws: pathId, session: pathId, task_id: pathId });

export const MAX_MESSAGE_CHARS = 100_000;
export const MAX_FILES_PER_MESSAGE = 5;

/** Letters, digits, `-` and `_`, up to 64 characters. */
export const streamId = z
  .string()
  .min(1)
  .max(64, 'stream_id is at most 64 characters.')
  .regex(/^[A-Za-z0-9_-]+$/, 'stream_id may contain only letters, digits, "-" and "_".');

export const streamPathParams = z.object({ ws: pathId, session: pathId, stream_id: streamId });

/** An event id (`id:` of the stream's events): a whole number; 0 or absent replays from the start. */
const eventId = z
  .string()
  .regex(/^\d{1,15}$/, 'An event id is a whole number.')
  .transform(Number);
export const reattachQuery = z.object({ last_event_id: eventId.optional() });
/** Other headers pass through untouched (authentication reads them). */
export const reattachHeaders = z.looseObject({ 'last-event-id': eventId.optional() });

export const sendBody = z.object({
  role: z.literal('user').default('user'),
  content: z.string().max(MAX_MESSAGE_CHARS),
  stream_id: streamId.optional(),
});
export type SendInput = z.output<typeof sendBody>;

export const regenerateBody = z.object({ user_message_id: z.uuid(), stream_id: streamId.optional() });
export const editBody = z.object({ content: z.string().max(MAX_MESSAGE_CHARS), stream_id: streamId.optional() });
export const updateMessageBody = z.object({ content: z.string().max(MAX_MESSAGE_CHARS) });
export const stopBody = z.object({ stream_id: streamId });
export const feedbackBody = z.object({
  rating: z.enum(['up', 'down']).nullable(),
  reason: z.string().max(2000).optional(),
});

export const messageOut = z.object({
  id: z.uuid(),
  session: z.uuid(),
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  author: z.number().int().nullable(),
  parent: z.uuid().nullable(),
  attachments: z.array(z.object({ id: z.string(), name: z.string(), content_type: z.string(), size: z.number().int() })),
  rating: z.enum(['up', 'down']).nullable(),
  reason: z.string(),
  stopped: z.boolean(),
  usage: z
    .object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() })
    .nullable(),
  ai_model: z.string().nullable(),
  sources: z.array(
    z.object({
      document_id: z.string(),
      document_name: z.string(),
      chunk_id: z.string(),
      score: z.number().describe('Reciprocal-rank-fusion score of full-text and vector search.'),
      rerank_score: z
        .number()
        .optional()
        .describe("The reranker's relevance score when RERANK_MODEL is set and it answered; sources are then in its order. Absent otherwise."),
      page: z
        .number()
        .int()
        .optional()
        .describe('The 1-based page (PDF), sheet (XLSX, ODS), slide (PPTX, ODP) or chapter (EPUB) the passage comes from; absent for formats without pages.'),
    }),
  ),
  created_at: timestamp,
  updated_at: timestamp,
});
export type MessageOut = z.output<typeof messageOut>;

export const asyncSendOut = messageOut.extend({ agent_task_id: z.uuid() });

export const agentTaskOut = z.object({
  task_id: z.uuid(),
  status: z.enum(agentTaskStatuses),
  message_id: z.uuid().nullable(),
  error: z.string().nullable(),
});
export type AgentTaskOut = z.output<typeof agentTaskOut>;
