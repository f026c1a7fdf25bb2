/** The two phases of a turn: what `prepare*` hands to `runTurn`, and what comes back. */
import type { Logger } from 'pino';
import type { Reservation } from '../billing/index.js';
import { type ChatAccess } from '../chats/index.js';
import type { MessageUsage } from './messages.table.js';
import type { BuiltCallSettings, ChatLanguageModel, ChatModel } from '../models/index.js';
import type * as repo from './messages.repo.js';
import { type MessageOut } from './messages.schemas.js';

/**
 * A user turn ready for the model (phase one, `prepare*`): permissions, throttle, plan and credit
 * are checked and the user message stored. `runTurn` (phase two) calls the model and saves the reply.
 */
export interface PreparedTurn {
  access: ChatAccess;
  userId: number;
  userMessage: repo.MessageRow;
  model: ChatModel;
  /** The model resolved and its call settings built once, when the turn was admitted. */
  languageModel: ChatLanguageModel;
  call: BuiltCallSettings;
  reservation: Reservation;
  streamId: string;
  /** The reply's id when it is fixed in advance (an agent task's), so that saving it twice saves it once. */
  replyId?: string;
  /** Reads of phase two started while phase one ran (TurnContext); absent: phase two reads them. */
  context?: TurnContext;
}

/**
 * What the model call needs besides the turn, read in phase one (issue 14: fewer round trips in
 * series before the model): the path came back from the statement that stored the user message.
 */
export interface TurnContext {
  /** The branch from the first message down to the user message (the user message last). */
  path: repo.PathMessage[];
  /** Whether the chat has knowledge the framework will use (false when it will not use it); already handled. */
  hasKnowledge: Promise<boolean>;
}

/** What a JSON send answers: the saved reply, or the user message whose reply was queued. */
export type SendOutcome =
  | { status: 'replied'; message: MessageOut }
  | { status: 'queued'; message: MessageOut; agentTaskId: string };

export interface GenerationResult {
  reply: repo.MessageRow;
  userMessage: repo.MessageRow;
  usage: MessageUsage;
  stopped: boolean;
}

/** An event stream as a streamed turn writes to it (an SSE response; platform/sse.ts). */
export interface TurnEventStream {
  sendEncoded(event: string, json: string, id?: number): void;
  end(): void;
  /** True once the client went away or the stream ended. */
  readonly closed: boolean;
}

/**
 * Where a streamed turn's events go. `open` is called once, after every refusal was answered as
 * a JSON error (nothing is sent before), with the turn's stream id.
 */
export interface TurnEventSink {
  open(streamId: string): TurnEventStream;
  /** The request's logger: a failure is logged with the request's id. */
  log: Pick<Logger, 'warn' | 'error'>;
}
