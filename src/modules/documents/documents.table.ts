import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  customType,
  index,
  integer,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { users } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { uuidPrimaryKey } from '../../db/columns.js';

const ts = (name: string) => timestamp(name, { withTimezone: true });

export const processingStatuses = ['pending', 'processing', 'ready', 'failed'] as const;
export type ProcessingStatus = (typeof processingStatuses)[number];
export const sourceKinds = ['upload', 'web_url', 'youtube'] as const;
export type SourceKind = (typeof sourceKinds)[number];
/** What a chunk's `page` counts: PDF pages, sheets (XLSX, ODS), slides (PPTX, ODP), EPUB chapters. */
export const pageUnits = ['page', 'sheet', 'slide', 'chapter'] as const;
export type PageUnit = (typeof pageUnits)[number];
export const taskStatuses = ['PENDING', 'STARTED', 'SUCCESS', 'FAILURE', 'RETRY', 'REVOKED'] as const;
export type TaskStatus = (typeof taskStatuses)[number];


export const documents = pgTable(
  'documents',
  {
    id: uuidPrimaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    contentType: text('content_type').notNull().default('application/octet-stream'),
    /** Bytes stored (declared at upload, the real size once confirmed or fetched). */
    size: bigint('size', { mode: 'number' }).notNull().default(0),
    sourceKind: text('source_kind', { enum: sourceKinds }).notNull(),
    sourceUrl: text('source_url'),
    storageKey: text('storage_key').notNull(),
    /** SHA-256 (base64) the client declared at `upload/`; checked against the stored bytes at confirm. */
    uploadChecksumSha256: text('upload_checksum_sha256'),
    processingStatus: text('processing_status', { enum: processingStatuses }).notNull().default('pending'),
    /** ISO 639-3 code detected at ingestion (`eng`, `deu`, `cmn`, …); null until then or when unknown. */
    language: text('language'),
    /** The text-search configuration its chunks are indexed with (search-language.ts); documents before languages were detected are English. */
    searchConfig: text('search_config').notNull().default('english'),
    /** What its chunks' `page` counts, from the format ingestion read; null before then or when the format has no pages. */
    pageUnit: text('page_unit', { enum: pageUnits }),
    uploadedBy: integer('uploaded_by').references(() => users.id, { onDelete: 'set null' }),
    /** Set once the client's upload was checked (uploads) or the content fetched (URLs). */
    storedAt: ts('stored_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('documents_workspace_idx').on(t.workspaceId, t.createdAt),
    check('documents_status_check', sql`${t.processingStatus} in ('pending', 'processing', 'ready', 'failed')`),
    check('documents_source_check', sql`${t.sourceKind} in ('upload', 'web_url', 'youtube')`),
    check('documents_page_unit_check', sql`${t.pageUnit} in ('page', 'sheet', 'slide', 'chapter')`),
  ],
);

export const ingestionTasks = pgTable(
  'ingestion_tasks',
  {
    id: uuidPrimaryKey(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    /** The background job's id. */
    taskId: text('task_id').notNull(),
    status: text('status', { enum: taskStatuses }).notNull().default('PENDING'),
    /** Written for the end user; technical details stay in the log. */
    errorMessage: text('error_message'),
    attempts: integer('attempts').notNull().default(0),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('ingestion_tasks_document_idx').on(t.documentId, t.createdAt), index('ingestion_tasks_status_idx').on(t.status)],
);

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
const regconfig = customType<{ data: string }>({ dataType: () => 'regconfig' });

/** Chunks exist once per document, whatever knowledge bases the document is in. */
export const documentChunks = pgTable(
  'document_chunks',
  {
    id: uuidPrimaryKey(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    chunkIndex: integer('chunk_index').notNull(),
    content: text('content').notNull(),
    tokenCount: integer('token_count').notNull(),
    page: integer('page'),
    /** The document's text-search configuration (documents.search_config), as the type to_tsvector takes. */
    tsConfig: regconfig('ts_config').notNull().default(sql`'english'::regconfig`),
    /** CJK text split into words for the `simple` parser (search-language.ts); null: the content is indexed. */
    searchText: text('search_text'),
    tsv: tsvector('tsv').generatedAlwaysAs(sql`to_tsvector(ts_config, coalesce(search_text, content))`),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('document_chunks_document_index_key').on(t.documentId, t.chunkIndex),
    index('document_chunks_tsv_idx').using('gin', t.tsv),
  ],
);
