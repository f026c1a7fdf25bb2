import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import type { SQL } from 'drizzle-orm';
import type { Db, DbOrTx } from '../../db/client.js';
import { AppError } from '../../platform/errors.js';
import { isUuid } from '../../platform/ids.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { throttle } from '../../platform/ratelimit/rates.js';
import type { RateLimiter } from '../../platform/ratelimit/port.js';
import type { ObjectStorage } from '../../platform/storage/port.js';
import type { JobsFor } from '../../platform/queue/jobs.js';
import type { CreditService } from '../billing/index.js';
import type { Plan, Plans } from '../billing/index.js';
import { resolveBillingState } from '../billing/index.js';
import { requireMember, type WorkspaceAccess } from '../workspaces/index.js';
import { isOwnerOrAdmin } from '../workspaces/index.js';
import { lockWorkspace } from '../workspaces/index.js';
import { documentErrors } from './documents.errors.js';
import { canChangeDocument } from './documents.policy.js';
import { toDocumentOut, toTaskOut } from './documents.mapper.js';
import * as repo from './documents.repo.js';
import type { DocumentOut, TaskOut } from './documents.schemas.js';
import type { SourceKind } from './documents.table.js';
import { newId } from '../../db/columns.js';

/** What the documents module needs to know about a user-given URL before queuing an import. */
export interface UrlPolicy {
  /** Throws 400 `url_not_allowed` for URLs that can never be fetched (scheme, userinfo, literal private IPs). */
  assertAllowed(url: string): URL;
  classify(url: URL): Exclude<SourceKind, 'upload'>;
}

/** A caller as the knowledge-base rules see them. */
export interface KbViewer {
  userId: number;
  isOwnerOrAdmin: boolean;
}

/**
 * What documents uses of knowledge bases: the module above it, which owns the attachments and the
 * read rule (wired in src/deps.ts from the knowledge-bases public API).
 */
export interface KnowledgeBaseLinks {
  /** SQL condition: the document (joined as `documents`) is attached to a knowledge base the viewer reads. */
  documentInReadableKb(viewer: KbViewer): SQL;
  findWritableKbs(db: DbOrTx, workspaceId: string, ids: string[], viewer: KbViewer): Promise<{ id: string }[]>;
  addDocuments(db: DbOrTx, kbId: string, documentIds: string[], addedBy: number): Promise<void>;
  removeDocuments(db: DbOrTx, kbId: string, documentIds: string[]): Promise<void>;
  kbIdsOfDocuments(db: DbOrTx, documentIds: string[]): Promise<Map<string, string[]>>;
}

export interface DocumentsServiceDeps {
  db: Db;
  knowledgeBases: KnowledgeBaseLinks;
  config: Pick<Config, 'THROTTLE_DOCUMENT_UPLOADS' | 'STORAGE_URL_TTL_SECONDS'>;
  plans: Plans;
  credit: CreditService;
  limiter: RateLimiter;
  storage: ObjectStorage;
  urls: UrlPolicy;
  /** Records the ingestion job of a task in the same transaction as the task (idempotent by task id). */
  jobs: JobsFor<{ 'documents.ingest': { taskId: string } }>;
  log: Logger;
}


/**
 * Where the client's PUT lands: never the document's own key. `confirm-upload/` checks it and
 * moves it to `storage_key` inside the store, so nothing a client holds (a second PUT to a
 * still-valid upload URL, on a store that ignores `If-None-Match`) can change the confirmed file.
 */
export function uploadKeyOf(document: { id: string; workspaceId: string }): string {
  return `uploads/${document.workspaceId}/${document.id}`;
}

async function sha256Base64(storage: ObjectStorage, key: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of await storage.get(key)) hash.update(chunk as Buffer);
  return hash.digest('base64');
}

/** A storage-key segment from a file name: letters, digits, `.`, `_`, `-`, not starting with `.` (keys.ts). */
function safeFileName(name: string): string {
  const cleaned = name.replace(/[^\w.-]+/g, '_').replace(/^\.+/, '').slice(0, 150);
  return cleaned || 'document';
}

export function createDocumentsService(deps: DocumentsServiceDeps) {
  const { db, config, plans, credit, limiter, storage, urls, jobs, knowledgeBases: kbRepo } = deps;
  const viewerOf = (access: WorkspaceAccess): repo.Viewer => {
    const viewer = { userId: access.userId, isOwnerOrAdmin: isOwnerOrAdmin(access) };
    return { ...viewer, inReadableKb: kbRepo.documentInReadableKb(viewer) };
  };

  async function loadDocument(userId: number, workspaceId: string, documentId: string, options: { write?: boolean; change?: boolean } = {}) {
    const access = await requireMember(db, workspaceId, userId, { write: options.write });
    const document = isUuid(documentId) ? await repo.findDocument(db, workspaceId, documentId) : undefined;
    if (!document || !(await repo.isVisible(db, document.id, viewerOf(access)))) throw documentErrors.notFound();
    if (options.change && !canChangeDocument(document, viewerOf(access))) throw documentErrors.notUploader();
    return { access, document };
  }

  async function out(row: repo.DocumentRow): Promise<DocumentOut> {
    const kbIds = await kbRepo.kbIdsOfDocuments(db, [row.id]);
    return toDocumentOut(row, kbIds.get(row.id) ?? []);
  }

  /** Knowledge bases the caller may add documents to; 400 for any other id. */
  async function writableKbIds(access: WorkspaceAccess, ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    const writable = new Set((await kbRepo.findWritableKbs(db, access.workspace.id, unique, viewerOf(access))).map((kb) => kb.id));
    const missing = unique.filter((id) => !writable.has(id));
    if (missing.length) throw documentErrors.unknownKbs(missing);
    return unique;
  }

  /**
   * Checks the plan's document and storage limits and inserts the document while the workspace
   * row is locked, so concurrent uploads cannot together pass a limit each passes alone.
   */
  async function insertWithinLimits(
    access: WorkspaceAccess,
    plan: Plan,
    values: Parameters<typeof repo.insertDocument>[1],
    kbIds: string[],
  ) {
    return db.transaction(async (tx) => {
      await lockWorkspace(tx, access.workspace.id);
      const usage = await repo.workspaceUsage(tx, access.workspace.id);
      if (usage.documents + 1 > plan.max_documents) throw documentErrors.documentLimit(plan.max_documents);
      if (usage.storageBytes + (values.size ?? 0) > plan.max_storage_bytes) throw documentErrors.storageLimit(plan.max_storage_bytes);
      const document = await repo.insertDocument(tx, values);
      for (const kbId of kbIds) await kbRepo.addDocuments(tx, kbId, [document.id], access.userId);
      return document;
    });
  }

  /** A new task and its job, written together (the outbox); the job is delivered after commit. */
  async function queueIngestion(documentId: string): Promise<repo.TaskRow> {
    const { task, job } = await db.transaction(async (tx) => {
      await repo.revokeOpenTasks(tx, documentId);
      await repo.updateDocument(tx, documentId, { processingStatus: 'pending' });
      const inserted = await repo.insertTask(tx, documentId);
      return { task: inserted, job: await jobs.record(tx, 'documents.ingest', { taskId: inserted.id }, { id: inserted.id }) };
    });
    // Not awaited: the task is recorded, so the answer does not wait on the queue (Redis may be slow or down).
    void jobs.dispatch([job]);
    return task;
  }

  return {
    async list(userId: number, workspaceId: string, page: PageQuery): Promise<PageResult<DocumentOut>> {
      const access = await requireMember(db, workspaceId, userId);
      const { rows, count } = await repo.listVisibleDocuments(db, workspaceId, viewerOf(access), page.limit, page.offset);
      const kbIds = await kbRepo.kbIdsOfDocuments(db, rows.map((r) => r.id));
      return { count, results: rows.map((row) => toDocumentOut(row, kbIds.get(row.id) ?? [])) };
    },

    async get(userId: number, workspaceId: string, documentId: string): Promise<DocumentOut> {
      return out((await loadDocument(userId, workspaceId, documentId)).document);
    },

    /** Rename, and optionally set the knowledge bases (the caller must be able to write to those added or removed). */
    async update(userId: number, workspaceId: string, documentId: string, input: { name?: string; knowledge_base_ids?: string[] }) {
      const { access, document } = await loadDocument(userId, workspaceId, documentId, { write: true, change: true });
      if (input.knowledge_base_ids !== undefined) {
        const current = (await kbRepo.kbIdsOfDocuments(db, [document.id])).get(document.id) ?? [];
        const wanted = new Set(input.knowledge_base_ids);
        const added = [...wanted].filter((id) => !current.includes(id));
        const removed = current.filter((id) => !wanted.has(id));
        await writableKbIds(access, [...added, ...removed]);
        await db.transaction(async (tx) => {
          for (const id of removed) await kbRepo.removeDocuments(tx, id, [document.id]);
          for (const id of added) await kbRepo.addDocuments(tx, id, [document.id], userId);
        });
      }
      const updated = input.name !== undefined ? await repo.updateDocument(db, document.id, { name: input.name }) : document;
      return out(updated!);
    },

    /** Deletes the document, its chunks and its stored file, and revokes a running ingestion. */
    async delete(userId: number, workspaceId: string, documentId: string): Promise<void> {
      const { document } = await loadDocument(userId, workspaceId, documentId, { write: true, change: true });
      await repo.revokeOpenTasks(db, document.id);
      await repo.deleteDocument(db, document.id);
      const keys = document.sourceKind === 'upload' ? [document.storageKey, uploadKeyOf(document)] : [document.storageKey];
      for (const key of keys) {
        await storage.delete(key).catch((error: unknown) => {
          deps.log.warn({ err: error, key }, 'could not delete a stored document file');
        });
      }
    },

    /** Step 1 of an upload: plan checks, the document row, and a presigned PUT URL. */
    async upload(
      userId: number,
      workspaceId: string,
      input: { name: string; content_type: string; size: number; knowledge_base_ids: string[]; checksum_sha256?: string },
    ) {
      const access = await requireMember(db, workspaceId, userId, { write: true });
      await throttle(limiter, 'document_uploads', userId, config.THROTTLE_DOCUMENT_UPLOADS);
      const { plan } = await resolveBillingState(db, plans, access.workspace);
      if (input.size > plan.max_file_size_bytes) throw documentErrors.fileTooLarge(plan.max_file_size_bytes);
      const kbIds = await writableKbIds(access, input.knowledge_base_ids);
      const id = newId();
      const document = await insertWithinLimits(
        access,
        plan,
        {
          id,
          workspaceId,
          name: input.name,
          contentType: input.content_type,
          size: input.size,
          sourceKind: 'upload',
          storageKey: `workspaces/${workspaceId}/documents/${id}/${safeFileName(input.name)}`,
          uploadChecksumSha256: input.checksum_sha256 ?? null,
          uploadedBy: userId,
        },
        kbIds,
      );
      const upload = await storage.createUploadUrl(uploadKeyOf(document), {
        contentType: input.content_type,
        expiresInSeconds: config.STORAGE_URL_TTL_SECONDS,
        maxBytes: input.size,
      });
      return {
        document: await out(document),
        upload: { url: upload.url, method: upload.method, headers: upload.headers, expires_at: upload.expiresAt.toISOString() },
      };
    },

    /**
     * Step 3: checks the uploaded object (size as declared, the plan, the checksum when one was
     * declared), moves it to the document's key and queues ingestion. Exactly one of concurrent
     * confirms moves it; a refused upload is discarded, so the same URL may be used again.
     */
    async confirmUpload(userId: number, workspaceId: string, documentId: string) {
      const { access, document } = await loadDocument(userId, workspaceId, documentId, { write: true, change: true });
      if (document.sourceKind !== 'upload') throw documentErrors.notAnUpload();
      if (document.storedAt) return this.processingStatus(userId, workspaceId, documentId);
      const uploadKey = uploadKeyOf(document);
      const stored = await storage.head(uploadKey);
      if (!stored) throw documentErrors.uploadMissing();
      const discard = async (error: Error): Promise<never> => {
        await storage.delete(uploadKey);
        throw error;
      };
      if (stored.size !== document.size) await discard(documentErrors.sizeMismatch(document.size, stored.size));
      // One read of the billing state: the plan's file size (the upload is discarded), then credit.
      const { plan } = await credit
        .check({
          workspace: access.workspace,
          refuseByPlan: (plan) => {
            if (stored.size > plan.max_file_size_bytes) throw documentErrors.fileTooLarge(plan.max_file_size_bytes);
          },
        })
        .catch((error: unknown) => (error instanceof AppError && error.code === 'file_too_large' ? discard(error) : Promise.reject(error)));
      const claim = await db.transaction(async (tx) => {
        await lockWorkspace(tx, workspaceId);
        const usage = await repo.workspaceUsage(tx, workspaceId);
        // The declared size is already counted; swap it for the real one.
        if (usage.storageBytes - document.size + stored.size > plan.max_storage_bytes) return 'over_limit' as const;
        // Only one confirm claims the document (stored_at was null): it alone moves the file.
        const claimed = await repo.claimUpload(tx, document.id, {
          size: stored.size,
          contentType: stored.contentType ?? document.contentType,
        });
        return claimed ? ('claimed' as const) : ('already_confirmed' as const);
      });
      // Outside the transaction: no storage call while rows are locked (DESIGN rule 6).
      if (claim === 'over_limit') await discard(documentErrors.storageLimit(plan.max_storage_bytes));
      if (claim === 'already_confirmed') return this.processingStatus(userId, workspaceId, documentId);
      try {
        await storage.commitUpload(uploadKey, document.storageKey);
        // Checked on the moved object, the one served and ingested: a PUT that raced the move
        // (on a store without conditional writes) cannot slip other bytes past these checks.
        const moved = await storage.head(document.storageKey);
        if (!moved || moved.size !== document.size) throw documentErrors.sizeMismatch(document.size, moved?.size ?? 0);
        const expected = document.uploadChecksumSha256;
        if (expected && (await sha256Base64(storage, document.storageKey)) !== expected) throw documentErrors.checksumMismatch();
      } catch (error) {
        await repo.updateDocument(db, document.id, { storedAt: null, size: document.size });
        await Promise.all([storage.delete(document.storageKey), storage.delete(uploadKey)]);
        throw error;
      }
      const task = await queueIngestion(document.id);
      return { processing_status: 'pending' as const, task: toTaskOut(task) };
    },

    async downloadUrl(userId: number, workspaceId: string, documentId: string) {
      const { document } = await loadDocument(userId, workspaceId, documentId);
      if (!document.storedAt) throw documentErrors.notStored();
      const signed = await storage.createDownloadUrl(document.storageKey, {
        filename: document.name,
        contentType: document.contentType,
        expiresInSeconds: config.STORAGE_URL_TTL_SECONDS,
      });
      return { url: signed.url, expires_at: signed.expiresAt.toISOString() };
    },

    async processingStatus(userId: number, workspaceId: string, documentId: string) {
      const { document } = await loadDocument(userId, workspaceId, documentId);
      const task = await repo.latestTask(db, document.id);
      return { processing_status: document.processingStatus, task: task ? toTaskOut(task) : null };
    },

    /** Uploader or admin; needs credit; counts against THROTTLE_DOCUMENT_UPLOADS like uploads and imports. */
    async reprocess(userId: number, workspaceId: string, documentId: string) {
      const { access, document } = await loadDocument(userId, workspaceId, documentId, { write: true, change: true });
      if (document.sourceKind === 'upload' && !document.storedAt) throw documentErrors.uploadMissing();
      // Re-extracting and re-embedding costs what an upload does: the same throttle and scope.
      await throttle(limiter, 'document_uploads', userId, config.THROTTLE_DOCUMENT_UPLOADS);
      await credit.check({ workspace: access.workspace });
      const task = await queueIngestion(document.id);
      return { processing_status: 'pending' as const, task: toTaskOut(task) };
    },

    async chunks(userId: number, workspaceId: string, documentId: string, page: PageQuery) {
      const { document } = await loadDocument(userId, workspaceId, documentId);
      const { rows, count } = await repo.listChunks(db, document.id, page.limit, page.offset);
      return {
        count,
        results: rows.map((c) => ({ id: c.id, index: c.chunkIndex, content: c.content, token_count: c.tokenCount, page: c.page })),
      };
    },

    /** Imports a web page or a YouTube video: checks first, fetching happens in the background. */
    async fromUrl(
      userId: number,
      workspaceId: string,
      input: { url: string; name?: string; knowledge_base_ids: string[] },
    ): Promise<{ document: DocumentOut; task: TaskOut }> {
      const access = await requireMember(db, workspaceId, userId, { write: true });
      await throttle(limiter, 'document_uploads', userId, config.THROTTLE_DOCUMENT_UPLOADS);
      const url = urls.assertAllowed(input.url);
      const kind = urls.classify(url);
      const kbIds = await writableKbIds(access, input.knowledge_base_ids);
      const { plan } = await credit.check({ workspace: access.workspace });
      const id = newId();
      const document = await insertWithinLimits(
        access,
        plan,
        {
          id,
          workspaceId,
          name: input.name ?? (`${url.hostname}${url.pathname === '/' ? '' : url.pathname}`.slice(0, 255) || url.hostname),
          contentType: kind === 'youtube' ? 'text/plain' : 'text/html',
          size: 0,
          sourceKind: kind,
          sourceUrl: url.toString(),
          storageKey: `workspaces/${workspaceId}/documents/${id}/source`,
          uploadedBy: userId,
        },
        kbIds,
      );
      const task = await queueIngestion(document.id);
      return { document: await out(document), task: toTaskOut(task) };
    },

    /** Documents and bytes of a workspace, for the plan endpoint. */
    usage: (workspaceId: string) => repo.workspaceUsage(db, workspaceId),

    /** Documents by processing status, all workspaces (operators' /metrics). */
    countByStatus: () => repo.countDocumentsByStatus(db),
  };
}

export type DocumentsService = ReturnType<typeof createDocumentsService>;
