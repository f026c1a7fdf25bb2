import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import type { Db, DbOrTx } from '../../db/client.js';
import { parseMediaType } from '../../platform/content-type.js';
import { AppError } from '../../platform/errors.js';
import { type SafeFetcher, youtubeVideoId } from '../../platform/fetch/fetcher.js';
import { UnrecoverableJobError } from '../../platform/queue/jobs.js';
import type { ServiceMetrics } from '../../platform/metrics.js';
import type { JobContext, JobFailure } from '../../platform/queue/port.js';
import type { ObjectStorage } from '../../platform/storage/port.js';
import type { Plans } from '../billing/index.js';
import { resolveBillingState } from '../billing/index.js';
import { documentStore as repo } from '../documents/index.js';
import { detectLanguage, searchConfigFor } from '../documents/index.js';
import { EmbeddingError, type EmbeddingsService, type Generation } from '../embeddings/index.js';
import { findWorkspace } from '../workspaces/index.js';
import { ExtractionError, extractText, PAGE_UNITS } from './extract/index.js';
import { IngestionError } from './ingestion.errors.js';
import { fetchYoutubeTranscript } from './youtube-transcript.js';

const GENERIC_FAILURE = 'The document could not be processed. Please try again later.';

export interface IngestionServiceDeps {
  db: Db;
  config: Pick<Config, 'YOUTUBE_BASE_URL'>;
  plans: Plans;
  storage: ObjectStorage;
  fetcher: SafeFetcher;
  embeddings: EmbeddingsService;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'documentIngested'>;
}

async function readObject(storage: ObjectStorage, key: string, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of await storage.get(key)) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buffer.length;
    if (size > limit) throw new IngestionError('too_large', 'The file is larger than the plan allows.');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/** The message a user sees for a failure (looking through UnrecoverableJobError); the cause goes to the log. */
function userMessageOf(error: unknown): string {
  if (error instanceof UnrecoverableJobError) return userMessageOf(error.cause);
  if (error instanceof ExtractionError || error instanceof IngestionError) return error.userMessage;
  if (error instanceof AppError) return error.detail;
  return GENERIC_FAILURE;
}

/** Failures worth another try: network trouble and the unexpected; never bad input. */
function isRetryable(error: unknown): boolean {
  if (error instanceof IngestionError) return error.retryable;
  if (error instanceof ExtractionError) return false;
  if (error instanceof AppError) return error.code === 'url_fetch_failed' || error.code === 'url_timeout' || error.status >= 500;
  return true;
}

/**
 * The ingestion job: fetch or read the content, extract text, chunk, embed (when EMBEDDING_MODEL
 * is set, billed to the workspace once per task) and store the chunks, all replaced in one
 * transaction. Task and document statuses move together: PENDING/pending, STARTED or RETRY with
 * processing, then SUCCESS/ready or FAILURE/failed (`markRetry` and `markFailed` are called by the
 * job system in the transaction that reschedules or gives up the job). A task revoked meanwhile
 * (document deleted or reprocessed) is left alone.
 */
export function createIngestionService(deps: IngestionServiceDeps) {
  const { db, config, plans, storage, fetcher, embeddings, log, metrics } = deps;

  /**
   * The chunks' vectors in every generation new chunks need (embeddings.writeTargets: the
   * configured model's, and while it is being built also the searched one's), each billed to the
   * workspace once per task, however often its job runs.
   */
  async function embed(
    taskId: string,
    workspaceId: string,
    texts: string[],
    userId: number | null,
    signal: AbortSignal | undefined,
  ): Promise<Array<{ generation: Generation; vectors: number[][] }>> {
    if (texts.length === 0) return [];
    const targets = await embeddings.writeTargets();
    const results: Array<{ generation: Generation; vectors: number[][] }> = [];
    for (const [i, generation] of targets.entries()) {
      const referenceId = i === 0 ? `embedding:${taskId}` : `embedding:${taskId}:${generation.id}`;
      try {
        results.push({ generation, vectors: await embeddings.embedMetered({ workspaceId, generation, texts, referenceId, userId, signal }) });
      } catch (error) {
        if (!(error instanceof EmbeddingError)) throw error;
        if (error.code === 'embedding_dimensions') {
          throw new IngestionError('embedding_dimensions', 'The configured embedding model returns vectors of an unsupported size.');
        }
        throw new IngestionError('embedding_failed', 'Creating search embeddings failed. Please try again later.', {
          cause: error.cause,
          retryable: true,
        });
      }
    }
    return results;
  }

  /** The bytes to extract, and what we learnt about them (URL imports store what they fetched). */
  async function content(document: repo.DocumentRow, maxBytes: number) {
    if (document.sourceKind === 'upload') {
      return { bytes: await readObject(storage, document.storageKey, maxBytes), contentType: document.contentType };
    }
    if (document.sourceKind === 'youtube') {
      const id = youtubeVideoId(document.sourceUrl ?? '');
      if (!id) throw new IngestionError('invalid_url', 'This is not a YouTube video link.');
      const transcript = await fetchYoutubeTranscript(fetcher, config.YOUTUBE_BASE_URL, id);
      return { bytes: Buffer.from(transcript.text, 'utf8'), contentType: 'text/plain; charset=utf-8', title: transcript.title };
    }
    const response = await fetcher.fetch(document.sourceUrl ?? '', { accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5' });
    if (response.status >= 400) {
      throw new IngestionError('http_error', `The page answered with HTTP status ${response.status}.`, { retryable: response.status >= 500 });
    }
    const contentType = response.contentType + (response.charset ? `; charset=${response.charset}` : '');
    return { bytes: response.body, contentType: contentType || 'text/html' };
  }

  return {
    /** Runs the task once; throws to fail this attempt (UnrecoverableJobError when another cannot help). */
    async run(taskId: string, context: Partial<Pick<JobContext, 'signal'>> = {}): Promise<void> {
      const task = await repo.findTask(db, taskId);
      if (!task || task.status === 'SUCCESS' || task.status === 'FAILURE' || task.status === 'REVOKED') return;
      const document = await repo.findDocumentById(db, task.documentId);
      if (!document) {
        await repo.updateTask(db, taskId, { status: 'REVOKED' });
        return;
      }
      // Conditional: a task revoked since it was read above stays revoked.
      if (!(await repo.startTask(db, taskId, document.id))) return;
      try {
        const workspace = await findWorkspace(db, document.workspaceId);
        if (!workspace) throw new IngestionError('gone', 'The workspace no longer exists.');
        const { plan } = await resolveBillingState(db, plans, workspace);
        const fetched = await content(document, plan.max_file_size_bytes);
        const extracted = await extractText({
          bytes: fetched.bytes,
          contentType: fetched.contentType,
          filename: document.name,
          sourceUrl: document.sourceUrl ?? undefined,
        });
        // The tokenizer's tables take a while to load: only a process that ingests loads them.
        const { chunkDocument } = await import('./chunk.js');
        const chunks = chunkDocument(extracted);
        if (chunks.length === 0) throw new IngestionError('no_text', 'No text could be found in this document.');
        const language = await detectLanguage(extracted.pages.map((p) => p.text).join('\n'));
        const searchConfig = searchConfigFor(language);
        context.signal?.throwIfAborted();
        const generationVectors = await embed(taskId, document.workspaceId, chunks.map((c) => c.content), document.uploadedBy, context.signal);
        context.signal?.throwIfAborted();

        if (document.sourceKind !== 'upload') {
          if (fetched.bytes.length > plan.max_file_size_bytes) {
            throw new IngestionError('too_large', 'The page is larger than the plan allows per document.');
          }
          // The size of an import is only known now; uploads were checked at upload and confirm.
          const usage = await repo.workspaceUsage(db, document.workspaceId);
          if (usage.storageBytes - document.size + fetched.bytes.length > plan.max_storage_bytes) {
            throw new IngestionError('storage_limit', "Storing this page would exceed the plan's storage limit.");
          }
          await storage.put(document.storageKey, fetched.bytes, { contentType: fetched.contentType, contentLength: fetched.bytes.length });
        }
        const applied = await db.transaction(async (tx) => {
          // Reprocessing or deletion meanwhile revoked this task: its result must not land.
          const current = await repo.lockTask(tx, taskId);
          if (!current || current.status === 'REVOKED') return false;
          const chunkIds = await repo.replaceChunks(
            tx,
            document,
            chunks.map((c) => ({ index: c.index, content: c.content, tokenCount: c.tokenCount, page: c.page })),
            searchConfig,
          );
          for (const { generation, vectors } of generationVectors) {
            await embeddings.store(tx, generation.id, chunkIds.map((chunkId, i) => ({ chunkId, vector: vectors[i]! })));
          }
          await repo.updateDocument(tx, document.id, {
            processingStatus: 'ready',
            language,
            searchConfig,
            // What the chunks' `page` counts, from the format actually read (not the file name).
            pageUnit: extracted.format ? PAGE_UNITS[extracted.format] : null,
            ...(document.sourceKind !== 'upload'
              ? { size: fetched.bytes.length, contentType: parseMediaType(fetched.contentType).mime, storedAt: new Date() }
              : {}),
          });
          await repo.updateTask(tx, taskId, { status: 'SUCCESS', errorMessage: null });
          return true;
        });
        if (applied) metrics.documentIngested(extracted.pages.length, chunks.length);
        if (!applied) {
          log.info({ taskId }, 'ingestion result dropped: the task was revoked');
          // An import whose document was deleted meanwhile must not leave the fetched page behind.
          if (document.sourceKind !== 'upload' && !(await repo.findDocumentById(db, document.id))) {
            await storage.delete(document.storageKey).catch((error: unknown) => {
              log.warn({ err: error, key: document.storageKey }, 'could not delete the file of a deleted document');
            });
          }
        }
      } catch (error) {
        const retryable = isRetryable(error);
        log[retryable ? 'warn' : 'error']({ err: error, taskId, documentId: document.id }, 'ingestion attempt failed');
        throw retryable ? error : new UnrecoverableJobError(userMessageOf(error), { cause: error });
      }
    },

    /** Another attempt is due: the task shows RETRY with what went wrong (its document stays processing). */
    async markRetry(tx: DbOrTx, taskId: string, failure: JobFailure): Promise<void> {
      await repo.updateOpenTask(tx, taskId, { status: 'RETRY', errorMessage: userMessageOf(failure.error) });
    },

    /** The attempts are spent: the task ends FAILURE with a message for the user, its document failed. */
    async markFailed(tx: DbOrTx, taskId: string, failure: JobFailure): Promise<void> {
      const task = await repo.updateOpenTask(tx, taskId, { status: 'FAILURE', errorMessage: userMessageOf(failure.error) });
      if (task) await repo.updateDocument(tx, task.documentId, { processingStatus: 'failed' });
    },

    /** An operator re-drives a failed task: PENDING again, its document pending (a revoked task stays revoked). */
    async reopen(tx: DbOrTx, taskId: string): Promise<void> {
      const task = await repo.reopenFailedTask(tx, taskId);
      if (task) await repo.updateDocument(tx, task.documentId, { processingStatus: 'pending' });
    },
  };
}

export type IngestionService = ReturnType<typeof createIngestionService>;
