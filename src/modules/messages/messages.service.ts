import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import type { Db, DbOrTx } from '../../db/client.js';
import { AppError, ValidationError } from '../../platform/errors.js';
import type { ServiceMetrics } from '../../platform/metrics.js';
import { fieldErrorsOf } from '../../platform/zod-issues.js';
import { type JobsFor, UnrecoverableJobError } from '../../platform/queue/jobs.js';
import type { JobFailure } from '../../platform/queue/port.js';
import { isUuid } from '../../platform/ids.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { throttle } from '../../platform/ratelimit/rates.js';
import type { RateLimiter } from '../../platform/ratelimit/port.js';
import type { ObjectStorage } from '../../platform/storage/port.js';
import type { KnowledgeSearch } from '../agents/index.js';
import type { CreditService } from '../billing/index.js';
import { type CachedChat, type ChatAccess, type ChatNeed, loadChat } from '../chats/index.js';
import type { CacheRegion } from '../../platform/cache/shared-cache.js';
import { chatErrors } from '../chats/index.js';
import { findChatById } from '../chats/index.js';
import { assertWritable } from '../workspaces/index.js';
import type { MessageAttachment } from './messages.table.js';
import type { ModelCatalog } from '../models/index.js';
import type { ModelRegistry } from '../models/index.js';
import { receiveParts } from './attachments.js';
import type { FormPart } from '../../platform/multipart.js';
import { canDeleteMessage, canEditMessage, canRateMessage, canRegenerate } from './messages.policy.js';
import * as repo from './messages.repo.js';
import { type AgentTaskOut, type MessageOut, sendBody, type SendInput } from './messages.schemas.js';
import type { StreamControl } from './stream-control.js';
import type { EventBuffer } from '../../platform/event-buffer/port.js';
import { toMessageOut } from './messages.mapper.js';
import { chatGoneAsNotFound, GENERIC_MODEL_FAILURE, messageErrors } from './messages.errors.js';
import type { PreparedTurn, SendOutcome, TurnEventSink } from './turn.js';
import { createTurnStreamer } from './turn.stream.js';
import { createTurnRunner } from './turn.run.js';
import { type Admitted, createTurnAdmission } from './turn.admit.js';
import { createReattach } from './reattach.js';

export { doneEventData, toMessageOut } from './messages.mapper.js';
export { GENERIC_MODEL_FAILURE, GENERIC_REPLY_FAILURE, isModelFailure, messageErrors, replyFailureDetail } from './messages.errors.js';
export type { GenerationResult, PreparedTurn, SendOutcome, TurnEventSink, TurnEventStream } from './turn.js';

export interface MessagesServiceDeps {
  db: Db;
  config: Pick<Config, 'THROTTLE_CHAT_MESSAGES'>;
  /** AGENT_ASYNC_ENABLED: a JSON send queues its reply as an agent task (202) instead of waiting for it. */
  agentAsync: boolean;
  catalog: ModelCatalog;
  credit: CreditService;
  limiter: RateLimiter;
  storage: ObjectStorage;
  modelRegistry: ModelRegistry;
  knowledge: KnowledgeSearch;
  streams: StreamControl;
  /** Recent events of streams, for clients that reattach. */
  eventBuffer: EventBuffer;
  /**
   * The chats (row and shares) its routes read, cached per chat and caller and dropped by the
   * chat's changes (chats' loadChat; src/deps.ts). Without it every request reads them.
   */
  chatCache?: CacheRegion<CachedChat>;
  /** Marks a chat active after a reply (chats owns its list and the list's cache; src/deps.ts). */
  touchChat: (chat: { id: string; workspaceId: string }) => Promise<void>;
  /** Records the background reply of an agent task in the task's own transaction. */
  jobs: JobsFor<{ 'chat.agent-reply': { taskId: string } }>;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'modelCall' | 'streamStopped' | 'streamOpened' | 'clientDisconnected'>;
}

export function createMessagesService(deps: MessagesServiceDeps) {
  const { db, config, agentAsync, catalog, credit, limiter, storage, modelRegistry, knowledge, streams, eventBuffer, chatCache, touchChat, jobs, log, metrics } = deps;
  /** A chat for a caller, as everywhere (loadChat), through the cache: none of these routes shows the chat's own fields. */
  const chatFor = (workspaceId: string, chatId: string, userId: number, need: ChatNeed) => loadChat(db, workspaceId, chatId, userId, need, chatCache);
  const { runTurn, readHasKnowledge } = createTurnRunner({ db, credit, storage, knowledge, streams, touchChat, log, metrics });
  const { admitTurn, admitModelCall, admitWithUserMessage } = createTurnAdmission({ db, config, catalog, credit, limiter, modelRegistry });

  async function loadMessage(access: ChatAccess, messageId: string) {
    const message = isUuid(messageId) ? await repo.findMessage(db, access.chat.id, messageId) : undefined;
    if (!message) throw messageErrors.notFound();
    return message;
  }

  /** The user message of a turn, with its path when the statement that stored it read that too. */
  type StoredMessage = { message: repo.MessageRow; path?: repo.PathMessage[] };

  const turnOf = (
    access: ChatAccess,
    userId: number,
    admitted: Admitted,
    stored: StoredMessage,
    streamId: string | undefined,
    hasKnowledge?: Promise<boolean>,
  ): PreparedTurn => ({
    access,
    userId,
    ...admitted,
    userMessage: stored.message,
    streamId: streamId ?? randomUUID(),
    ...(stored.path && hasKnowledge ? { context: { path: stored.path, hasKnowledge } } : {}),
  });

  /** Stores (or reads) the user message of an admitted turn; the held credit goes back if that fails. */
  async function prepareTurn(
    access: ChatAccess,
    userId: number,
    admitted: Admitted,
    userMessage: () => Promise<StoredMessage>,
    streamId: string | undefined,
  ): Promise<PreparedTurn> {
    try {
      return turnOf(access, userId, admitted, await userMessage(), streamId);
    } catch (error) {
      await credit.release(admitted.reservation);
      throw error;
    }
  }

  /**
   * Phase one of a send (JSON or multipart). A multipart send passes every check before a file is
   * stored: its text may come after its files, so the credit held for it is estimated from the
   * reply alone (the charge is the real usage either way), and its files are measured against the
   * plan the gate read.
   */
  async function prepareSend(userId: number, workspaceId: string, chatId: string, input: SendInput | AsyncIterable<FormPart>) {
    const access = await chatFor(workspaceId, chatId, userId, 'write');
    if (!(Symbol.asyncIterator in input)) {
      if (!input.content.trim()) throw messageErrors.emptyMessage();
      await throttle(limiter, 'chat_messages', userId, config.THROTTLE_CHAT_MESSAGES);
      // Past the throttle, the knowledge read of phase two starts beside the statement that holds
      // the credit and stores the message (with its path); a refusal by the gate leaves it unused.
      const model = catalog.chatModel(access.chat.aiModel);
      const hasKnowledge = model && readHasKnowledge(access.chat, model);
      const { admitted, stored } = await admitWithUserMessage(access, userId, input.content);
      return turnOf(access, userId, admitted, stored, input.stream_id, hasKnowledge);
    }
    const admitted = await admitTurn(access, userId, '');
    let attachments: MessageAttachment[] = [];
    try {
      const received = await receiveParts(input, {
        storage,
        keyPrefix: `workspaces/${workspaceId}/chats/${chatId}/attachments`,
        maxFileBytes: admitted.reservation.plan.max_file_size_bytes,
      });
      attachments = received.attachments;
      const parsed = sendBody.safeParse(received.fields);
      if (!parsed.success) throw new ValidationError('Invalid input in body.', fieldErrorsOf(parsed.error.issues));
      const body = parsed.data;
      if (!body.content.trim() && attachments.length === 0) throw messageErrors.emptyMessage();
      const stored = await repo.insertUnderNewestReply(db, { sessionId: access.chat.id, role: 'user', content: body.content, authorId: userId, attachments }).catch(chatGoneAsNotFound);
      return turnOf(access, userId, admitted, stored, body.stream_id);
    } catch (error) {
      // Whatever failed after the gate: the files go and the held credit goes back (once).
      await Promise.allSettled(attachments.map((a) => storage.delete(a.storage_key)));
      await credit.release(admitted.reservation);
      throw error;
    }
  }

  /** Phase one of a regenerate: another reply to a user message, as a new branch. */
  async function prepareRegenerate(userId: number, workspaceId: string, chatId: string, userMessageId: string, streamId?: string) {
    const access = await chatFor(workspaceId, chatId, userId, 'write');
    const message = await loadMessage(access, userMessageId);
    if (message.role !== 'user') throw messageErrors.notUserMessage('user_message_id');
    if (!canRegenerate(message, userId, access.chat.ownerId)) throw messageErrors.cannotRegenerate();
    return prepareTurn(access, userId, await admitTurn(access, userId, message.content), async () => ({ message }), streamId);
  }

  /** Phase one of an edit: the user message changed (author only), to be answered again as a new branch. */
  async function prepareEdit(userId: number, workspaceId: string, chatId: string, messageId: string, content: string, streamId?: string) {
    const access = await chatFor(workspaceId, chatId, userId, 'write');
    const message = await loadMessage(access, messageId);
    if (!canEditMessage(message, userId)) {
      throw message.role === 'user' ? messageErrors.notAuthor() : messageErrors.notUserMessage('id');
    }
    if (!content.trim() && message.attachments.length === 0) throw messageErrors.emptyMessage();
    const admitted = await admitTurn(access, userId, content);
    return prepareTurn(access, userId, admitted, async () => ({ message: await repo.updateMessage(db, message.id, { content }) }), streamId);
  }

  const streamTurn = createTurnStreamer({ runTurn, eventBuffer, log, metrics });
  const reattach = createReattach({ db, eventBuffer });

  /** Phase two: the reply as events on the caller's stream, or without a stream the saved reply. */
  async function answer(turn: PreparedTurn, sink: TurnEventSink | undefined): Promise<MessageOut | undefined> {
    if (sink) {
      await streamTurn(turn, sink);
      return undefined;
    }
    const { reply } = await runTurn(turn, () => undefined);
    return toMessageOut(reply);
  }

  const service = {

    /**
     * Reattaching to a stream: open to whoever may read the chat (404 otherwise, as everywhere).
     * Buffered: its events after `afterId`, then live ones until the end; a client that already
     * has the end gets nothing more. Expired but the reply is saved: a `done` rebuilt from it
     * (no event id). Neither: 404 `stream_not_found`.
     */
    reattach,

    async list(userId: number, workspaceId: string, chatId: string, page: PageQuery): Promise<PageResult<MessageOut>> {
      const { chat } = await chatFor(workspaceId, chatId, userId, 'read');
      const { rows, count } = await repo.listMessagesPage(db, chat.id, page.limit, page.offset);
      return { count, results: rows.map(toMessageOut) };
    },

    async get(userId: number, workspaceId: string, chatId: string, messageId: string): Promise<MessageOut> {
      const access = await chatFor(workspaceId, chatId, userId, 'read');
      return toMessageOut(await loadMessage(access, messageId));
    },

    /** Edit without a new reply: the author only. */
    async update(userId: number, workspaceId: string, chatId: string, messageId: string, content: string) {
      const access = await chatFor(workspaceId, chatId, userId, 'write');
      const message = await loadMessage(access, messageId);
      if (!canEditMessage(message, userId)) {
        throw message.role === 'user' ? messageErrors.notAuthor() : messageErrors.notUserMessage('id');
      }
      // As on every other path: a user message keeps some text or an attachment.
      if (!content.trim() && message.attachments.length === 0) throw messageErrors.emptyMessage();
      return toMessageOut(await repo.updateMessage(db, message.id, { content }));
    },

    /** Deletes a message and everything below it; attachments leave storage too. */
    async delete(userId: number, workspaceId: string, chatId: string, messageId: string): Promise<void> {
      const access = await chatFor(workspaceId, chatId, userId, 'write');
      const message = await loadMessage(access, messageId);
      if (!canDeleteMessage(message, userId, access.chat.ownerId)) throw messageErrors.cannotDelete();
      const removed = (await repo.listMessagesOfChat(db, chatId)).filter((m) => m.attachments.length);
      await repo.deleteMessage(db, message.id);
      const remaining = new Set((await repo.listMessagesOfChat(db, chatId)).map((m) => m.id));
      const orphaned = removed.filter((m) => !remaining.has(m.id)).flatMap((m) => m.attachments);
      await Promise.allSettled(orphaned.map((a) => storage.delete(a.storage_key)));
    },

    /** Anyone who can read the chat rates assistant messages; a null rating clears it. */
    async feedback(userId: number, workspaceId: string, chatId: string, messageId: string, rating: 'up' | 'down' | null, reason?: string) {
      const access = await chatFor(workspaceId, chatId, userId, 'read');
      // Readers may rate, but a rating is a write: refused while the workspace is archived.
      assertWritable(access.workspace.workspace);
      const message = await loadMessage(access, messageId);
      if (!canRateMessage(message)) throw messageErrors.notRateable();
      const updated = await repo.updateMessage(db, message.id, { rating, reason: rating === null ? '' : (reason ?? '') });
      return toMessageOut(updated);
    },

    async stop(userId: number, workspaceId: string, chatId: string, streamId: string): Promise<void> {
      const { chat } = await chatFor(workspaceId, chatId, userId, 'write');
      await streams.stop(chat.id, streamId);
    },

    async taskStatus(userId: number, workspaceId: string, chatId: string, taskId: string): Promise<AgentTaskOut> {
      const { chat } = await chatFor(workspaceId, chatId, userId, 'read');
      const task = isUuid(taskId) ? await repo.findAgentTask(db, taskId) : undefined;
      if (!task || task.sessionId !== chat.id) throw messageErrors.taskNotFound();
      return { task_id: task.id, status: task.status, message_id: task.messageId, error: task.error };
    },

    /**
     * Queues the reply of a turn as background agent work (AGENT_ASYNC_ENABLED): the task and its
     * job are written in one transaction, and the job is delivered after commit.
     */
    async queueTurn(turn: PreparedTurn) {
      // The job reserves credit again when it runs: a reservation must not outlive a queue wait.
      await credit.release(turn.reservation);
      const { task, job } = await db.transaction(async (tx) => {
        const inserted = await repo.insertAgentTask(tx, {
          sessionId: turn.access.chat.id,
          userMessageId: turn.userMessage.id,
          requestedBy: turn.userId,
        });
        return { task: inserted, job: await jobs.record(tx, 'chat.agent-reply', { taskId: inserted.id }, { id: inserted.id }) };
      });
      // Not awaited: the task is recorded, so the answer does not wait on the queue (Redis may be slow or down).
      void jobs.dispatch([job]);
      return task;
    },

    /**
     * The background job: runs the turn behind an agent task. Refusals (membership, plan, credit)
     * fail it at once with their message; other failures are retried by the job system, which
     * calls `markAgentTaskRetry` / `markAgentTaskFailed`. The reply's id is fixed on the task, so a
     * run repeated after a crash saves (and charges) one reply.
     */
    async runAgentTask(taskId: string): Promise<void> {
      const task = await repo.findAgentTask(db, taskId);
      if (!task || task.status === 'SUCCESS' || task.status === 'FAILURE') return;
      const chat = await findChatById(db, task.sessionId);
      // An earlier run saved the reply and died before recording it: record it now.
      const saved = chat ? await repo.findMessage(db, chat.id, task.replyId) : undefined;
      if (saved) {
        await repo.updateAgentTask(db, taskId, { status: 'SUCCESS', messageId: saved.id, error: null });
        return;
      }
      await repo.updateAgentTask(db, taskId, { status: 'STARTED' });
      try {
        if (!chat || task.requestedBy === null) throw chatErrors.notFound();
        const access = await loadChat(db, chat.workspaceId, chat.id, task.requestedBy, 'write');
        const userMessage = await loadMessage(access, task.userMessageId);
        const admitted = await admitModelCall(access, userMessage.content);
        const turn = { access, userId: task.requestedBy, ...admitted, userMessage, streamId: task.id, replyId: task.replyId };
        const { reply } = await runTurn(turn, () => undefined);
        await repo.updateAgentTask(db, taskId, { status: 'SUCCESS', messageId: reply.id, error: null });
      } catch (error) {
        // Refusals (membership, plan, credit, archived) will not change by retrying; an unavailable
        // dependency (503) or a model failure may.
        if (error instanceof AppError && error.status < 500) throw new UnrecoverableJobError(error.detail, { cause: error });
        log.error({ err: error, taskId }, 'agent task attempt failed');
        throw error;
      }
    },

    /** Another attempt is due: the task shows PENDING again. */
    async markAgentTaskRetry(tx: DbOrTx, taskId: string): Promise<void> {
      await repo.updateOpenAgentTask(tx, taskId, { status: 'PENDING' });
    },

    /** Given up: FAILURE with the refusal's message, or the generic one (details stay in the log). */
    async markAgentTaskFailed(tx: DbOrTx, taskId: string, failure: JobFailure): Promise<void> {
      const cause = failure.error instanceof UnrecoverableJobError ? failure.error.cause : failure.error;
      const message = cause instanceof AppError ? cause.detail : GENERIC_MODEL_FAILURE;
      await repo.updateOpenAgentTask(tx, taskId, { status: 'FAILURE', error: message });
    },

    /** An operator re-drives a failed task: PENDING again, so its next run generates the reply. */
    async reopenAgentTask(tx: DbOrTx, taskId: string): Promise<void> {
      await repo.reopenFailedAgentTask(tx, taskId);
    },
  };

  return {
    ...service,

    /**
     * The streamed endpoints, one call each: phase one (every refusal a JSON error), then the
     * reply as events on `sink`'s stream, or, for a client that does not accept an event stream
     * (rule 8), the saved reply.
     */
    async streamSend(userId: number, workspaceId: string, chatId: string, input: SendInput | AsyncIterable<FormPart>, sink?: TurnEventSink) {
      return answer(await prepareSend(userId, workspaceId, chatId, input), sink);
    },
    async streamRegenerate(userId: number, workspaceId: string, chatId: string, userMessageId: string, streamId?: string, sink?: TurnEventSink) {
      return answer(await prepareRegenerate(userId, workspaceId, chatId, userMessageId, streamId), sink);
    },
    async streamEdit(userId: number, workspaceId: string, chatId: string, messageId: string, content: string, streamId?: string, sink?: TurnEventSink) {
      return answer(await prepareEdit(userId, workspaceId, chatId, messageId, content, streamId), sink);
    },

    /** A JSON send: the reply (201), or, with AGENT_ASYNC_ENABLED, the user message and its queued agent task (202). */
    async send(userId: number, workspaceId: string, chatId: string, input: SendInput | AsyncIterable<FormPart>): Promise<SendOutcome> {
      const turn = await prepareSend(userId, workspaceId, chatId, input);
      if (!agentAsync) return { status: 'replied', message: (await answer(turn, undefined))! };
      const task = await service.queueTurn(turn);
      return { status: 'queued', message: toMessageOut(turn.userMessage), agentTaskId: task.id };
    },

    /** A JSON regenerate: the new reply. */
    async regenerate(userId: number, workspaceId: string, chatId: string, userMessageId: string): Promise<MessageOut> {
      return (await answer(await prepareRegenerate(userId, workspaceId, chatId, userMessageId), undefined))!;
    },
  };
}

export type MessagesService = ReturnType<typeof createMessagesService>;
