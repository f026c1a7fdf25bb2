import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import type { Logger } from 'pino';
import type { Config } from '../../config/env.js';
import type { Db, DbOrTx } from '../../db/client.js';
import {
  AppError,
  NotFoundError,
  PermissionDeniedError,
  SERVICE_UNAVAILABLE_DETAIL,
  ServiceUnavailableError,
  ValidationError,
} from '../../platform/errors.js';
import { SpanKind } from '@opentelemetry/api';
import { faultLogFields, isDependencyUnavailable } from '../../platform/faults.js';
import type { ModelCallOutcome, ServiceMetrics } from '../../platform/metrics.js';
import { withSpan } from '../../platform/tracing.js';
import { type JobsFor, UnrecoverableJobError } from '../../platform/queue/jobs.js';
import type { JobFailure } from '../../platform/queue/port.js';
import { isUuid } from '../../platform/ids.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { throttle } from '../../platform/ratelimit/rates.js';
import type { RateLimiter } from '../../platform/ratelimit/port.js';
import type { ObjectStorage } from '../../platform/storage/port.js';
import type { AgentEvent } from '../agents/index.js';
import { agentFramework, ModelCallError } from '../agents/index.js';
import type { KnowledgeSearch } from '../agents/index.js';
import type { CreditService, Reservation } from '../billing/index.js';
import type { Plans } from '../billing/index.js';
import { resolveBillingState } from '../billing/index.js';
import { type ChatAccess, loadChat } from '../chats/index.js';
import { chatErrors } from '../chats/index.js';
import { findChatById, touchChat } from '../chats/index.js';
import { assertWritable } from '../workspaces/index.js';
import type { MessageAttachment, MessageUsage } from './messages.table.js';
import { buildCallSettings } from '../models/index.js';
import type { ModelCatalog } from '../models/index.js';
import type { ChatModel } from '../models/index.js';
import type { ModelRegistry } from '../models/index.js';
import { attachmentToParts, type IncomingPart, receiveParts } from './attachments.js';
import { canDeleteMessage, canEditMessage, canRateMessage, canRegenerate } from './messages.policy.js';
import * as repo from './messages.repo.js';
import { type AgentTaskOut, type MessageOut, sendBody, type SendInput } from './messages.schemas.js';
import type { StreamControl } from './stream-control.js';
import type { EventBuffer } from '../../platform/event-buffer/port.js';
import { createStreamRecorder, isTerminal, type StreamEvent, streamBufferKey } from './stream-replay.js';
import { newId } from '../../db/columns.js';

/** Chunks one knowledge search returns (the `tools` search and `direct`'s retrieval alike). */
const KNOWLEDGE_SEARCH_LIMIT = 6;

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

/** A user turn ready for the model: permissions, throttle, plan and credit are already checked. */
export interface Turn {
  access: ChatAccess;
  userId: number;
  userMessage: repo.MessageRow;
  model: ChatModel;
  reservation: Reservation;
  streamId: string;
  /** The reply's id when it is fixed in advance (an agent task's), so that saving it twice saves it once. */
  replyId?: string;
}

/** The `done` event's data: the same whether streamed live, replayed, or rebuilt from the saved reply. */
export function doneEventData(reply: repo.MessageRow) {
  return { message_id: reply.id, user_message_id: reply.parentId, usage: reply.usage, stopped: reply.stopped, sources: reply.sources };
}

/** Longest one wait for new events of a followed stream; the follower then checks its client is still there. */
const FOLLOW_WAIT_MS = 2000;
const STREAM_GONE_DETAIL = 'The stream is no longer available; fetch the chat\'s messages.';

export interface GenerationResult {
  reply: repo.MessageRow;
  userMessage: repo.MessageRow;
  usage: MessageUsage;
  stopped: boolean;
}

export const messageErrors = {
  notFound: () => new NotFoundError('Message not found.'),
  notAuthor: () => new PermissionDeniedError('Only the author of a message can edit it.', 'not_message_author'),
  cannotRegenerate: () =>
    new PermissionDeniedError("Only the message's author or the chat's owner can regenerate.", 'permission_denied'),
  cannotDelete: () =>
    new PermissionDeniedError("Only the chat's owner can delete replies; user messages also by their author.", 'permission_denied'),
  notUserMessage: (field: string) =>
    new ValidationError('This must be a user message.', { [field]: ['This must be a user message.'] }, 'not_a_user_message'),
  notRateable: () =>
    new ValidationError('Only assistant messages can be rated.', { rating: ['Only assistant messages can be rated.'] }, 'not_rateable'),
  emptyMessage: () => new ValidationError('The message is empty.', { content: ['Write something or attach a file.'] }),
  taskNotFound: () => new NotFoundError('Task not found.'),
  streamNotFound: () => new NotFoundError('Stream not found.', 'stream_not_found'),
  /** The JSON endpoints' counterpart of the stream's `error` event: generic, details in the log. */
  modelFailed: () => new AppError(502, 'model_failed', GENERIC_MODEL_FAILURE),
};

/** Shown to the user when the model fails mid-way; the cause goes to the log only. */
export const GENERIC_MODEL_FAILURE = 'The model could not complete the reply. Please try again.';
/** Shown when a reply fails for a reason that is neither the model nor an unreachable dependency. */
export const GENERIC_REPLY_FAILURE = 'The reply could not be completed. Please try again.';

/**
 * What a stream's `error` event says about a failed generation (the JSON endpoints answer the
 * same cases with 502 `model_failed`, 503 `service_unavailable` or 500): the model failed, the
 * database or Redis could not be reached (saving the reply, say), or something else went wrong.
 */
export function replyFailureDetail(error: unknown): string {
  // First: a model provider that cannot be reached is a model failure, not ours.
  if (error instanceof ModelCallError) return GENERIC_MODEL_FAILURE;
  if (error instanceof ServiceUnavailableError && error.code === 'service_unavailable') return SERVICE_UNAVAILABLE_DETAIL;
  if (isDependencyUnavailable(error)) return SERVICE_UNAVAILABLE_DETAIL;
  return GENERIC_REPLY_FAILURE;
}

/** A deadline passed (the SDK's or a fetch's TimeoutError, or an abort for one), anywhere in the cause chain. */
function isTimeout(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause.name === 'TimeoutError') return true;
  }
  return false;
}

// About four characters a token: good enough to estimate a reservation or an unreported usage.
const estimateTokens = (text: string) => Math.ceil(text.length / 4);

export interface MessagesServiceDeps {
  db: Db;
  config: Pick<Config, 'THROTTLE_CHAT_MESSAGES'>;
  plans: Plans;
  catalog: ModelCatalog;
  credit: CreditService;
  limiter: RateLimiter;
  storage: ObjectStorage;
  modelRegistry: ModelRegistry;
  knowledge: KnowledgeSearch;
  streams: StreamControl;
  /** Recent events of streams, for clients that reattach. */
  eventBuffer: EventBuffer;
  /** Records the background reply of an agent task in the task's own transaction. */
  jobs: JobsFor<{ 'chat.agent-reply': { taskId: string } }>;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'modelCall' | 'streamStopped'>;
}

export function createMessagesService(deps: MessagesServiceDeps) {
  const { db, config, plans, catalog, credit, limiter, storage, modelRegistry, knowledge, streams, eventBuffer, jobs, log, metrics } = deps;

  /** Plan, provider and credit checks shared by every model-calling endpoint. */
  async function admitModelCall(access: ChatAccess, estimateText: string) {
    const model = catalog.chatModel(access.chat.aiModel);
    if (!model) throw chatErrors.unknownModel(access.chat.aiModel);
    // Resolving the model now turns an unconfigured provider into a JSON error before streaming.
    modelRegistry.languageModel(model.id);
    const { settings } = buildCallSettings(model, {
      temperature: access.chat.temperature,
      model_parameters: access.chat.modelParameters,
    });
    const estimate =
      (estimateTokens(estimateText) * model.input_price_per_million + settings.maxOutputTokens * model.output_price_per_million) /
      1_000_000;
    // The billing gate: plan inclusion and credit, on one read of the billing state.
    const reservation = await credit.admit({ workspace: access.workspace.workspace, model, estimate });
    return { model, reservation };
  }

  async function loadMessage(access: ChatAccess, messageId: string) {
    const message = isUuid(messageId) ? await repo.findMessage(db, access.chat.id, messageId) : undefined;
    if (!message) throw messageErrors.notFound();
    return message;
  }

  async function toModelMessages(path: repo.MessageRow[], model: ChatModel): Promise<ModelMessage[]> {
    const result: ModelMessage[] = [];
    for (const message of path) {
      if (message.role === 'assistant') {
        if (message.content) result.push({ role: 'assistant', content: message.content });
        continue;
      }
      const files = await Promise.all(
        message.attachments.map((a) => attachmentToParts(a, { storage, supportsImages: model.supports_images })),
      );
      const parts = [...(message.content ? [{ type: 'text' as const, text: message.content }] : []), ...files.flat()];
      result.push({ role: 'user', content: parts.length ? parts : [{ type: 'text', text: '' }] });
    }
    return result;
  }

  /** Runs the agent for a turn and saves the reply; stops are honoured through `streams`. */
  async function generate(turn: Turn, onEvent: (event: AgentEvent) => void): Promise<GenerationResult> {
    const { access, model, reservation, userMessage } = turn;
    const chat = access.chat;
    // One line per reply at its end (never its text): who, which model, tokens, cost, timings, outcome.
    const summary = {
      userId: turn.userId,
      workspaceId: chat.workspaceId,
      chatId: chat.id,
      streamId: turn.streamId,
      model: model.id,
      provider: model.provider,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      durationMs: 0,
      timeToFirstTokenMs: null as number | null,
      outcome: 'error' as ModelCallOutcome,
    };
    const started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    let firstToken: number | undefined;
    const onAgentEvent = (event: AgentEvent) => {
      if (firstToken === undefined && event.type === 'delta') firstToken = elapsed();
      onEvent(event);
    };
    /** The model call's metrics, once, however the call ended. */
    const recordCall = (outcome: ModelCallOutcome, inputTokens: number, outputTokens: number) => {
      const costUsd = credit.costOf({ kind: 'chat', model: model.id, inputTokens, outputTokens, referenceId: '' });
      Object.assign(summary, { outcome, inputTokens, outputTokens, costUsd, durationMs: Math.round(elapsed() * 1000) });
      if (firstToken !== undefined) summary.timeToFirstTokenMs = Math.round(firstToken * 1000);
      metrics.modelCall({
        kind: 'chat',
        provider: model.provider,
        model: model.id,
        outcome,
        durationSeconds: elapsed(),
        ...(firstToken !== undefined ? { firstTokenSeconds: firstToken } : {}),
        inputTokens,
        outputTokens,
        costUsd,
      });
      if (outcome === 'stopped') metrics.streamStopped();
    };
    return streams.run(chat.id, turn.streamId, async (signal) => {
      try {
        const path = await repo.findPath(db, userMessage.id);
        const messages = await toModelMessages(path, model);
        const framework = agentFramework(chat.agentFramework);
        const hasKnowledge = (model.supports_tools || !framework.searchesThroughTools) && (await knowledge.hasKnowledge(chat.id));
        let outcome;
        try {
          outcome = await withSpan(
            `chat ${model.id}`,
            {
              kind: SpanKind.CLIENT,
              attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': model.provider, 'gen_ai.request.model': model.id },
            },
            async (span) => {
              const result = await framework.run({
                model: modelRegistry.languageModel(model.id),
                system: chat.systemPrompt || undefined,
                messages,
                call: buildCallSettings(model, { temperature: chat.temperature, model_parameters: chat.modelParameters }),
                abortSignal: signal,
                query: userMessage.content,
                searchKnowledge: hasKnowledge
                  ? (query) => knowledge.search({ workspaceId: chat.workspaceId, chatId: chat.id, query, limit: KNOWLEDGE_SEARCH_LIMIT })
                  : null,
                onEvent: onAgentEvent,
              });
              span?.setAttributes({
                'gen_ai.usage.input_tokens': result.usage?.inputTokens ?? 0,
                'gen_ai.usage.output_tokens': result.usage?.outputTokens ?? 0,
                'gen_ai.response.stopped': result.stopped,
              });
              return result;
            },
          );
        } catch (error) {
          recordCall(isTimeout(error) ? 'timeout' : 'error', 0, 0);
          log.error({ err: error, chatId: chat.id, model: model.id }, 'model call failed');
          throw error instanceof ModelCallError ? error : new ModelCallError(error);
        }
        // A stopped stream often ends before the provider reports usage: bill an estimate of what was produced.
        const promptText = path.map((m) => m.content).join('\n') + (chat.systemPrompt ?? '');
        const inputTokens = outcome.usage?.inputTokens || estimateTokens(promptText);
        const outputTokens = outcome.usage?.outputTokens ?? estimateTokens(outcome.text);
        const usage = { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
        recordCall(outcome.stopped ? 'stopped' : 'ok', inputTokens, outputTokens);
        const reply = await repo.insertMessageOnce(db, {
          id: turn.replyId ?? newId(),
          sessionId: chat.id,
          role: 'assistant',
          content: outcome.text,
          parentId: userMessage.id,
          stopped: outcome.stopped,
          usage,
          aiModel: model.id,
          sources: outcome.sources,
          streamId: turn.streamId,
        });
        await credit.settle(reservation, {
          kind: 'chat',
          model: model.id,
          userId: turn.userId,
          inputTokens,
          outputTokens,
          referenceId: `chat:${reply.id}`,
        });
        await touchChat(db, chat.id);
        log.info({ ...summary, messageId: reply.id }, 'reply finished');
        return { reply, userMessage, usage, stopped: outcome.stopped };
      } catch (error) {
        // Whatever failed before the charge (the model, reading the path or an attachment, saving
        // the reply), the held credit goes back now rather than when the reservation expires.
        // Releasing a settled reservation changes nothing. When the database is down the release
        // fails too: the reservation then lapses by itself, and the original error is the one to report.
        await credit.release(reservation).catch((releaseError: unknown) => {
          log.warn({ ...faultLogFields(releaseError), chatId: chat.id }, 'could not release a credit reservation');
        });
        log.info({ ...summary, failed: true }, 'reply finished');
        throw error;
      }
    });
  }

  async function startTurn(
    access: ChatAccess,
    userId: number,
    userMessage: () => Promise<repo.MessageRow>,
    estimateText: string,
    streamId: string | undefined,
  ): Promise<Turn> {
    await throttle(limiter, 'chat_messages', userId, config.THROTTLE_CHAT_MESSAGES);
    const { model, reservation } = await admitModelCall(access, estimateText);
    try {
      return { access, userId, model, reservation, userMessage: await userMessage(), streamId: streamId ?? randomUUID() };
    } catch (error) {
      await credit.release(reservation);
      throw error;
    }
  }

  /**
   * The events of a buffered stream after `afterId`, then live ones until `done` or `error`. The
   * first read (the whole buffer) happened in `reattach`; `signal` ends the wait when the client
   * has gone.
   */
  async function* follow(
    key: string,
    chatId: string,
    streamId: string,
    afterId: number,
    first: StreamEvent[],
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent> {
    let last = afterId;
    let events: StreamEvent[] | null = first;
    while (!signal.aborted) {
      if (events === null) {
        // Expired mid-way (its process died, say): the saved reply if there is one.
        const reply = await repo.findReplyOfStream(db, chatId, streamId);
        if (reply) yield { event: 'done', data: JSON.stringify(doneEventData(reply)) } satisfies StreamEvent;
        else yield { event: 'error', data: JSON.stringify({ detail: STREAM_GONE_DETAIL }) } satisfies StreamEvent;
        return;
      }
      for (const event of events) {
        if (event.id! <= last) continue;
        last = event.id!;
        yield event;
        if (isTerminal(event)) return;
      }
      events = await eventBuffer.read(key, last, FOLLOW_WAIT_MS);
    }
  }

  return {
    generate,

    /** Numbers a turn's events and buffers them for reattaching (see stream-replay.ts). */
    recordStream(turn: Turn) {
      return createStreamRecorder(eventBuffer, streamBufferKey(turn.access.chat.id, turn.streamId), log);
    },

    /**
     * Reattaching to a stream: open to whoever may read the chat (404 otherwise, as everywhere).
     * Buffered: its events after `afterId`, then live ones until the end; a client that already
     * has the end gets nothing more. Expired but the reply is saved: a `done` rebuilt from it
     * (no event id). Neither: 404 `stream_not_found`.
     */
    async reattach(
      userId: number,
      workspaceId: string,
      chatId: string,
      streamId: string,
      afterId: number,
      signal: AbortSignal,
    ): Promise<AsyncGenerator<StreamEvent>> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'read');
      const key = streamBufferKey(chat.id, streamId);
      const buffered = await eventBuffer.read(key, 0, 0);
      if (buffered === null) {
        const reply = await repo.findReplyOfStream(db, chat.id, streamId);
        if (!reply) throw messageErrors.streamNotFound();
        return (async function* (): AsyncGenerator<StreamEvent> {
          yield { event: 'done', data: JSON.stringify(doneEventData(reply)) } satisfies StreamEvent;
        })();
      }
      const ended = buffered.some((event) => isTerminal(event) && event.id <= afterId);
      return follow(key, chat.id, streamId, afterId, ended ? [] : buffered, ended ? AbortSignal.abort() : signal);
    },

    /** A new user message (JSON or multipart) under the newest reply, ready for the model. */
    async startSend(userId: number, workspaceId: string, chatId: string, input: SendInput | AsyncIterable<IncomingPart>) {
      const access = await loadChat(db, workspaceId, chatId, userId, 'write');
      let body: SendInput;
      let attachments: MessageAttachment[] = [];
      if (Symbol.asyncIterator in input) {
        const state = await resolveBillingState(db, plans, access.workspace.workspace);
        const received = await receiveParts(input, {
          storage,
          keyPrefix: `workspaces/${workspaceId}/chats/${chatId}/attachments`,
          maxFileBytes: state.plan.max_file_size_bytes,
        });
        attachments = received.attachments;
        const parsed = sendBody.safeParse(received.fields);
        if (!parsed.success) {
          await Promise.allSettled(attachments.map((a) => storage.delete(a.storage_key)));
          const errors: Record<string, string[]> = {};
          for (const issue of parsed.error.issues) (errors[issue.path.join('.') || 'non_field_errors'] ??= []).push(issue.message);
          throw new ValidationError('Invalid input in body.', errors);
        }
        body = parsed.data;
      } else {
        body = input;
      }
      if (!body.content.trim() && attachments.length === 0) throw messageErrors.emptyMessage();
      try {
        return await startTurn(
          access,
          userId,
          async () => {
            const parent = await repo.findNewestReply(db, chatId);
            return repo.insertMessage(db, {
              sessionId: chatId,
              role: 'user',
              content: body.content,
              authorId: userId,
              parentId: parent?.id ?? null,
              attachments,
            });
          },
          body.content,
          body.stream_id,
        );
      } catch (error) {
        await Promise.allSettled(attachments.map((a) => storage.delete(a.storage_key)));
        throw error;
      }
    },

    /** Another reply to a user message, as a new branch. */
    async startRegenerate(userId: number, workspaceId: string, chatId: string, userMessageId: string, streamId?: string) {
      const access = await loadChat(db, workspaceId, chatId, userId, 'write');
      const message = await loadMessage(access, userMessageId);
      if (message.role !== 'user') throw messageErrors.notUserMessage('user_message_id');
      if (!canRegenerate(message, userId, access.chat.ownerId)) throw messageErrors.cannotRegenerate();
      return startTurn(access, userId, async () => message, message.content, streamId);
    },

    /** Edits a user message (author only) and answers it again as a new branch. */
    async startEdit(userId: number, workspaceId: string, chatId: string, messageId: string, content: string, streamId?: string) {
      const access = await loadChat(db, workspaceId, chatId, userId, 'write');
      const message = await loadMessage(access, messageId);
      if (!canEditMessage(message, userId)) {
        throw message.role === 'user' ? messageErrors.notAuthor() : messageErrors.notUserMessage('id');
      }
      if (!content.trim() && message.attachments.length === 0) throw messageErrors.emptyMessage();
      return startTurn(access, userId, () => repo.updateMessage(db, message.id, { content }), content, streamId);
    },

    async list(userId: number, workspaceId: string, chatId: string, page: PageQuery): Promise<PageResult<MessageOut>> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'read');
      const { rows, count } = await repo.listMessagesPage(db, chat.id, page.limit, page.offset);
      return { count, results: rows.map(toMessageOut) };
    },

    async get(userId: number, workspaceId: string, chatId: string, messageId: string): Promise<MessageOut> {
      const access = await loadChat(db, workspaceId, chatId, userId, 'read');
      return toMessageOut(await loadMessage(access, messageId));
    },

    /** Edit without a new reply: the author only. */
    async update(userId: number, workspaceId: string, chatId: string, messageId: string, content: string) {
      const access = await loadChat(db, workspaceId, chatId, userId, 'write');
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
      const access = await loadChat(db, workspaceId, chatId, userId, 'write');
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
      const access = await loadChat(db, workspaceId, chatId, userId, 'read');
      // Readers may rate, but a rating is a write: refused while the workspace is archived.
      assertWritable(access.workspace.workspace);
      const message = await loadMessage(access, messageId);
      if (!canRateMessage(message)) throw messageErrors.notRateable();
      const updated = await repo.updateMessage(db, message.id, { rating, reason: rating === null ? '' : (reason ?? '') });
      return toMessageOut(updated);
    },

    async stop(userId: number, workspaceId: string, chatId: string, streamId: string): Promise<void> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'write');
      await streams.stop(chat.id, streamId);
    },

    async taskStatus(userId: number, workspaceId: string, chatId: string, taskId: string): Promise<AgentTaskOut> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'read');
      const task = isUuid(taskId) ? await repo.findAgentTask(db, taskId) : undefined;
      if (!task || task.sessionId !== chat.id) throw messageErrors.taskNotFound();
      return { task_id: task.id, status: task.status, message_id: task.messageId, error: task.error };
    },

    /**
     * Queues the reply of a turn as background agent work (AGENT_ASYNC_ENABLED): the task and its
     * job are written in one transaction, and the job is delivered after commit.
     */
    async createAgentTask(turn: Turn) {
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
        const { model, reservation } = await admitModelCall(access, userMessage.content);
        const turn = { access, userId: task.requestedBy, model, reservation, userMessage, streamId: task.id, replyId: task.replyId };
        const { reply } = await generate(turn, () => undefined);
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
}

export type MessagesService = ReturnType<typeof createMessagesService>;
