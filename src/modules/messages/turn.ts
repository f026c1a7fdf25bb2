/** The two phases of a turn: what `prepare*` hands to `runTurn`, and what comes back. */
import type { Reservation } from '../billing/index.js';
import { type ChatAccess } from '../chats/index.js';
import type { MessageUsage } from './messages.table.js';
import type { ChatModel } from '../models/index.js';
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
  reservation: Reservation;
  streamId: string;
  /** The reply's id when it is fixed in advance (an agent task's), so that saving it twice saves it once. */
  replyId?: string;
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
