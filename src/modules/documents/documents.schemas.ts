import { z } from 'zod';
import { pathId } from '../../platform/ids.js';
import { processingStatuses, sourceKinds, taskStatuses } from './documents.table.js';

const timestamp = z.iso.datetime({ offset: true });

export const workspaceParams = z.object({ ws: pathId });
export const documentParams = z.object({ ws: pathId, id: pathId });

export const documentOut = z.object({
  id: z.uuid(),
  workspace: z.uuid(),
  name: z.string(),
  content_type: z.string(),
  size: z.number().int(),
  source_kind: z.enum(sourceKinds),
  source_url: z.string().nullable(),
  processing_status: z.enum(processingStatuses),
  language: z
    .string()
    .nullable()
    .describe(
      'The language detected in the text when it was processed, as an ISO 639-3 code (`eng`, `deu`, `cmn`, …); it chooses how the text is searched (stemming, word splitting). Null until processed and when it could not be told (very short text).',
    ),
  uploaded_by: z.number().int().nullable(),
  knowledge_base_ids: z.array(z.uuid()),
  created_at: timestamp,
  updated_at: timestamp,
});
export type DocumentOut = z.output<typeof documentOut>;

export const taskOut = z.object({
  id: z.uuid(),
  document: z.uuid(),
  task_id: z.string(),
  status: z.enum(taskStatuses),
  error_message: z.string().nullable(),
  created_at: timestamp,
});
export type TaskOut = z.output<typeof taskOut>;

export const processingStatusOut = z.object({
  processing_status: z.enum(processingStatuses),
  task: taskOut.nullable(),
});

const documentName = z.string().trim().min(1).max(255);
const contentType = z
  .string()
  .trim()
  .min(3)
  .max(255)
  .regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, 'Must be a MIME type such as application/pdf.');
const kbIds = z.array(z.uuid()).max(100).default([]);

export const uploadBody = z.object({
  name: documentName,
  content_type: contentType,
  size: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  knowledge_base_ids: kbIds,
  /** Optional SHA-256 of the file, base64 (44 characters); `confirm-upload/` refuses other bytes. */
  checksum_sha256: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=$/, 'Expected the base64 SHA-256 of the file (44 characters).')
    .optional(),
});
export const uploadOut = z.object({
  document: documentOut,
  upload: z.object({
    url: z.string(),
    method: z.literal('PUT'),
    headers: z.record(z.string(), z.string()),
    expires_at: timestamp,
  }),
});

export const fromUrlBody = z.object({
  url: z.string().trim().min(1).max(2048),
  name: documentName.optional(),
  knowledge_base_ids: kbIds,
});
export const fromUrlOut = z.object({ document: documentOut, task: taskOut });

export const updateDocumentBody = z.object({
  name: documentName.optional(),
  knowledge_base_ids: z.array(z.uuid()).max(100).optional(),
});

export const downloadUrlOut = z.object({ url: z.string(), expires_at: timestamp });

export const chunkOut = z.object({
  id: z.uuid(),
  index: z.number().int(),
  content: z.string(),
  token_count: z.number().int(),
  page: z
    .number()
    .int()
    .nullable()
    .describe('The 1-based page (PDF), sheet (XLSX, ODS), slide (PPTX, ODP) or chapter (EPUB) of the chunk; null for formats without pages.'),
});
