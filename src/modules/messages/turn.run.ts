import { faultLogFields } from '../../platform/faults.js';
import type { ModelMessage } from 'ai';
import type { Logger } from 'pino';
import type { Db } from '../../db/client.js';
import { SpanKind } from '@opentelemetry/api';
import type { ModelCallOutcome, ServiceMetrics } from '../../platform/metrics.js';
import { withSpan } from '../../platform/tracing.js';
import type { ObjectStorage } from '../../platform/storage/port.js';
import type { AgentEvent } from '../agents/index.js';
import { agentFramework, ModelCallError } from '../agents/index.js';
import type { KnowledgeSearch } from '../agents/index.js';
import type { CreditService } from '../billing/index.js';
import type { ChatModel } from '../models/index.js';
import { attachmentToParts } from './attachments.js';
import * as repo from './messages.repo.js';
import type { StreamControl } from './stream-control.js';
import { newId } from '../../db/columns.js';
import type { GenerationResult, PreparedTurn } from './turn.js';

/** Chunks one knowledge search returns (the `tools` search and `direct`'s retrieval alike). */
const KNOWLEDGE_SEARCH_LIMIT = 6;

/** A deadline passed (the SDK's or a fetch's TimeoutError, or an abort for one), anywhere in the cause chain. */
function isTimeout(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause.name === 'TimeoutError') return true;
  }
  return false;
}

// About four characters a token: good enough to estimate a reservation or an unreported usage.
export const estimateTokens = (text: string) => Math.ceil(text.length / 4);

/** What running a turn uses. */
export interface TurnRunnerDeps {
  db: Db;
  credit: CreditService;
  storage: ObjectStorage;
  knowledge: KnowledgeSearch;
  streams: StreamControl;
  /** Marks the chat active after its reply was saved. */
  touchChat: (chat: { id: string; workspaceId: string }) => Promise<void>;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'modelCall' | 'streamStopped'>;
}

/** Phase two of a turn: the model call, its events, the saved reply and the settled credit. */
export function createTurnRunner(deps: TurnRunnerDeps) {
  const { db, credit, storage, knowledge, streams, touchChat, log, metrics } = deps;

  async function toModelMessages(path: repo.PathMessage[], model: ChatModel): Promise<ModelMessage[]> {
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

  /**
   * Starts reading whether the chat has knowledge the chat's framework will use with this model
   * (false without a read when it will not use it). The promise is marked handled: a turn refused
   * meanwhile leaves no unhandled rejection.
   */
  function readHasKnowledge(chat: PreparedTurn['access']['chat'], model: ChatModel): Promise<boolean> {
    const framework = agentFramework(chat.agentFramework);
    const uses = model.supports_tools || !framework.searchesThroughTools;
    const read = uses ? knowledge.hasKnowledge(chat) : Promise.resolve(false);
    read.catch(() => undefined);
    return read;
  }

  /** Runs the agent for a turn and saves the reply; stops are honoured through `streams`. */
  async function runTurn(turn: PreparedTurn, onEvent: (event: AgentEvent) => void): Promise<GenerationResult> {
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
        const framework = agentFramework(chat.agentFramework);
        // Read during phase one when it could be (TurnContext), else here, side by side.
        const early = turn.context;
        const [path, hasKnowledge] = early
          ? [early.path, await early.hasKnowledge]
          : await Promise.all([repo.findPath(db, userMessage.id), readHasKnowledge(chat, model)]);
        // Read once; the turn no longer holds the rows while the reply streams.
        turn.context = undefined;
        const messages = await toModelMessages(path, model);
        // Estimated now, so that the branch's rows are not held for the whole reply.
        const promptEstimate = estimateTokens(path.map((m) => m.content).join('\n') + (chat.systemPrompt ?? ''));
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
                model: turn.languageModel,
                system: chat.systemPrompt || undefined,
                messages,
                call: turn.call,
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
        const inputTokens = outcome.usage?.inputTokens || promptEstimate;
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
        await touchChat(chat);
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

  return { runTurn, readHasKnowledge };
}
