import type { Config } from '../../config/env.js';
import type { Db } from '../../db/client.js';
import { throttle } from '../../platform/ratelimit/rates.js';
import type { RateLimiter } from '../../platform/ratelimit/port.js';
import type { CreditService, Reservation } from '../billing/index.js';
import { type ChatAccess, chatErrors } from '../chats/index.js';
import { type BuiltCallSettings, buildCallSettings, type ChatLanguageModel, type ChatModel, type ModelCatalog, type ModelRegistry, tokenCost } from '../models/index.js';
import * as repo from './messages.repo.js';
import { chatGoneAsNotFound } from './messages.errors.js';
import { estimateTokens } from './turn.run.js';

/** What the billing gate let through for a turn: the model, resolved, with its call settings, and the credit held. */
export interface Admitted {
  model: ChatModel;
  languageModel: ChatLanguageModel;
  call: BuiltCallSettings;
  reservation: Reservation;
}

export interface TurnAdmissionDeps {
  db: Db;
  config: Pick<Config, 'THROTTLE_CHAT_MESSAGES'>;
  catalog: ModelCatalog;
  credit: CreditService;
  limiter: RateLimiter;
  modelRegistry: ModelRegistry;
}

/** Phase one of a turn past the chat's access: the model, the billing gate and (admitTurn) the throttle. */
export function createTurnAdmission({ db, config, catalog, credit, limiter, modelRegistry }: TurnAdmissionDeps) {
  /**
   * Phase one's checks for every turn: the per-user throttle, then the billing gate (archived,
   * plan, credit) on one read of the billing state. The model is resolved (an unconfigured
   * provider is a JSON error before anything streams) and its call settings built here, once.
   */
  async function admitTurn(access: ChatAccess, userId: number, estimateText: string): Promise<Admitted> {
    await throttle(limiter, 'chat_messages', userId, config.THROTTLE_CHAT_MESSAGES);
    return admitModelCall(access, estimateText);
  }

  /** The model of a turn, resolved, with its call settings and the credit it is estimated to need. */
  function modelCallOf(access: ChatAccess, estimateText: string) {
    const model = catalog.chatModel(access.chat.aiModel);
    if (!model) throw chatErrors.unknownModel(access.chat.aiModel);
    const languageModel = modelRegistry.languageModel(model.id);
    const call = buildCallSettings(model, { temperature: access.chat.temperature, model_parameters: access.chat.modelParameters });
    const estimate = tokenCost(model, estimateTokens(estimateText), call.settings.maxOutputTokens);
    return { model, languageModel, call, estimate };
  }

  async function admitModelCall(access: ChatAccess, estimateText: string): Promise<Admitted> {
    const { estimate, ...resolved } = modelCallOf(access, estimateText);
    const reservation = await credit.admit({ workspace: access.workspace.workspace, model: resolved.model, estimate });
    return { ...resolved, reservation };
  }

  /**
   * The billing gate of a JSON send and its user message: the credit held and the message stored
   * in one statement (the message only if the credit was held), one round trip before the model
   * call instead of two in a row. Nothing to give back when it fails: it wrote nothing.
   */
  async function admitWithUserMessage(access: ChatAccess, userId: number, content: string) {
    const { estimate, ...resolved } = modelCallOf(access, content);
    const values = { sessionId: access.chat.id, role: 'user' as const, content, authorId: userId, attachments: [] };
    const { reservation, result: stored } = await credit.admitWith(
      { workspace: access.workspace.workspace, model: resolved.model, estimate },
      async (hold) => {
        const row = await repo.insertUnderNewestReplyHolding(db, hold, values).catch(chatGoneAsNotFound);
        return row && { reservationId: row.holdId, result: { message: row.message, path: row.path } };
      },
    );
    return { admitted: { ...resolved, reservation }, stored };
  }

  return { admitTurn, admitModelCall, admitWithUserMessage };
}
