import type { Logger } from 'pino';
import type { Db } from '../../../db/client.js';
import { PaymentRequiredError } from '../../../platform/errors.js';
import type { ServiceMetrics } from '../../../platform/metrics.js';
import { tokenCost, type ModelCatalog } from '../../models/index.js';
import { assertWritable, findWorkspace, type WorkspaceRow } from '../../workspaces/index.js';
import type { UsageKind } from '../billing.table.js';
import * as repo from './credit.repo.js';
import { billingErrors } from '../billing.errors.js';
import { type Plan, planIncludesModel, type Plans } from '../plan/plans.js';
import { type BillingInputs, billingStateFrom, resolveBillingState } from '../plan/billing-state.js';
import { findBillingInputs } from '../billing.repo.js';
import { accessTags, type CacheRegion } from '../../../platform/cache/shared-cache.js';

export const creditExhausted = () =>
  new PaymentRequiredError("This workspace's AI credit for the current period is used up.", 'credit_exhausted');

/** Credit held for one call in flight. */
export interface Reservation {
  id: string;
  workspaceId: string;
  amountUsd: number;
  /** The plan the gate read when the call was admitted: later checks of the call use it, not a second read. */
  plan: Plan;
}

/** A model as the plan rule sees it. */
export interface ModelRef {
  id: string;
  tier: string;
}

/**
 * What the gate needs: whose credit and which model. `model` may be picked from the plan (its
 * default model) on the same read of the billing state; it is omitted when no plan rule applies
 * (an operator-chosen model, embeddings).
 */
/** A workspace by id, or its row when the caller has it (the gate then does not read it again). */
export type WorkspaceInput = string | { id: string } | WorkspaceRow;

export interface GateRequest<M extends ModelRef = ModelRef> {
  workspace: WorkspaceInput;
  model?: M | ((plan: Plan) => M);
  /** Further refusals by the plan's limits (a file's size), after the model rule and before the credit check. */
  refuseByPlan?: (plan: Plan) => void;
}

/** What `admit` needs besides: the estimated cost in USD (given the model, when the plan picked it). */
export interface AdmitRequest<M extends ModelRef = ModelRef> extends GateRequest<M> {
  estimate: number | ((model: M | undefined) => number);
}

/** What the gate let through: the plan it read and the model it checked. */
export interface Admission<M extends ModelRef = ModelRef> {
  plan: Plan;
  model: M | undefined;
}

/** What a call really used; cost comes from the catalog unless given. */
export interface ActualUsage {
  kind: UsageKind;
  model: string;
  userId?: number | null;
  inputTokens?: number;
  outputTokens?: number;
  seconds?: number;
  /** Overrides the catalog price (for models priced elsewhere). */
  costUsd?: number;
  /** Unique per call: settling twice with the same reference charges once. */
  referenceId: string;
}

export interface CreditSummary {
  credit_limit: number;
  total_cost_used: number;
  percentage_used: number;
}

// A reservation whose process died stops holding credit after this long.
const RESERVATION_TTL_MS = 15 * 60_000;

export interface CreditServiceDeps {
  db: Db;
  /**
   * The gate's billing inputs cached per workspace (src/deps.ts), dropped in every process by a
   * payment-provider event that applied (webhook service: the subscription's workspaces, or every
   * workspace for a product or price) and by an operator's override of that workspace.
   * Without it every gate reads them (one statement).
   */
  billingCache?: CacheRegion<BillingInputs>;
  plans: Plans;
  catalog: ModelCatalog;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'creditRefused'>;
}

/**
 * The credit ledger. Model calls pass `admit` before they start and `settle` with the provider's
 * reported usage after. A reservation is refused once the period's recorded cost plus the credit
 * held by calls in flight reaches the plan's credit, so the last call of a period may overrun it
 * by at most its own cost, and parallel calls cannot all slip through: the check and the hold
 * are one UPDATE of the period's running totals (`credit_balances`), which re-checks the limit
 * against the row as the previous call left it. The ledger stays the audit trail.
 */
export function createCreditService({ db, plans, catalog, log, metrics, billingCache }: CreditServiceDeps) {
  /** The billing state for the gate, from the cache when there is one. */
  async function gateState(workspace: { id: string; ownerId: number }) {
    if (!billingCache) return resolveBillingState(db, plans, workspace);
    const inputs = await billingCache.through(workspace.id.toLowerCase(), async () => {
      const value = Object.freeze(await findBillingInputs(db, workspace.id, new Date()));
      // An override that ends must stop counting when it ends, cached or not.
      const expiresAt = value.override?.endsAt?.getTime();
      return { value, tags: [accessTags.billing(), accessTags.billingOf(workspace.id)], ...(expiresAt ? { expiresAt } : {}) };
    });
    return billingStateFrom(plans, workspace, inputs!, new Date());
  }

  const refuse = () => {
    metrics.creditRefused();
    return creditExhausted();
  };

  function costOf(usage: ActualUsage): number {
    if (usage.costUsd !== undefined) return usage.costUsd;
    const input = usage.inputTokens ?? 0;
    const output = usage.outputTokens ?? 0;
    const chat = catalog.chatModel(usage.model);
    if (chat) return tokenCost(chat, input, output);
    const embedding = catalog.embeddingModel(usage.model);
    if (embedding) return (input * embedding.input_price_per_million) / 1_000_000;
    const transcription = catalog.transcriptionModel(usage.model);
    if (transcription) return ((usage.seconds ?? 0) / 60) * transcription.price_per_minute;
    log.warn({ model: usage.model, kind: usage.kind }, 'model has no price in the catalog; charging 0');
    return 0;
  }

  /** The workspace row the gate needs; a caller that loaded it (a chat's access) passes it and saves the read. */
  async function workspaceOf(workspace: WorkspaceInput) {
    if (typeof workspace !== 'string' && 'status' in workspace && 'ownerId' in workspace) return workspace;
    const id = typeof workspace === 'string' ? workspace : workspace.id;
    const row = await findWorkspace(db, id);
    if (!row) throw new Error(`billing gate: workspace ${id} does not exist`);
    return row;
  }

  /** The period's running totals, opened from the ledger on the period's first use. */
  async function balanceOf(workspaceId: string, periodStart: Date) {
    const found = await repo.findBalance(db, workspaceId, periodStart);
    if (found) return found;
    await db.transaction((tx) => repo.openBalance(tx, workspaceId, periodStart));
    return (await repo.findBalance(db, workspaceId, periodStart))!;
  }

  /** Whether credit is left in the period; expired reservations (a crashed call) are given back first when they are what stands in the way. */
  async function creditLeft(workspaceId: string, periodStart: Date, limitUsd: number): Promise<boolean> {
    const balance = await balanceOf(workspaceId, periodStart);
    if (balance.usedUsd + balance.reservedUsd < limitUsd) return true;
    if (balance.reservedUsd <= 0 || (await repo.closeExpiredReservations(db, workspaceId)) === 0) return false;
    const after = (await repo.findBalance(db, workspaceId, periodStart))!;
    return after.usedUsd + after.reservedUsd < limitUsd;
  }

  /**
   * The refusals of the billing gate, in their order, on one read of the billing state: an
   * archived workspace (409 `workspace_archived`: callers that load the workspace for writing
   * refuse it earlier, so 409 before 402 holds everywhere), a model outside the plan (402
   * `model_not_in_plan`; picking it from the plan may refuse first, e.g. 400 for an unknown
   * model) and further limits of the plan (`refuseByPlan`). The credit check is the caller's.
   */
  async function gate<M extends ModelRef>(request: GateRequest<M>) {
    const row = await workspaceOf(request.workspace);
    assertWritable(row);
    const state = await gateState(row);
    const model = typeof request.model === 'function' ? request.model(state.plan) : request.model;
    if (model && !planIncludesModel(state.plan, model)) throw billingErrors.modelNotInPlan(model.id);
    request.refuseByPlan?.(state.plan);
    return { workspaceId: row.id, state, model };
  }

  /**
   * The billing gate before every model call: the refusals of `gate`, then `estimate` USD of
   * credit held in one statement that checks the period's running totals and reserves (no lock
   * held across round trips; parallel calls cannot all slip through). A refusal, or the
   * period's first call, costs a few more statements: opening the totals, giving back expired
   * reservations.
   */
  async function admit<M extends ModelRef>(request: AdmitRequest<M>): Promise<Reservation & Admission<M>> {
    const hold = async (values: repo.HoldValues) => {
      const id = await repo.reserve(db, values);
      return id === undefined ? undefined : { reservationId: id, result: undefined };
    };
    return (await admitWith(request, hold)).reservation;
  }

  /**
   * `admit` for a caller with a write that must happen only if the credit is held, in the same
   * statement: `write` runs its statement composed with the hold's CTEs (`holdCtes`, on
   * `values`) and answers the hold's id with its own result, or undefined when the hold was
   * refused (its write then did not happen either). A statement that fails wrote nothing, so
   * nothing is held. `write` may run twice: again after a refusal that opening the period's
   * totals or giving back expired reservations may lift.
   */
  async function admitWith<M extends ModelRef, R>(
    request: AdmitRequest<M>,
    write: (values: repo.HoldValues) => Promise<{ reservationId: string; result: R } | undefined>,
  ): Promise<{ reservation: Reservation & Admission<M>; result: R }> {
    const { workspaceId, state, model } = await gate(request);
    const estimate = typeof request.estimate === 'function' ? request.estimate(model) : request.estimate;
    const amount = Math.max(0, estimate);
    const limitUsd = state.plan.ai_credit;
    const hold = () => write(repo.holdValues(workspaceId, state.periodStart, amount, limitUsd, new Date(Date.now() + RESERVATION_TTL_MS)));
    let held = await hold();
    // Refused or not opened yet: open the totals (or give back expired holds) and try once more.
    if (!held && (await creditLeft(workspaceId, state.periodStart, limitUsd))) held = await hold();
    if (!held) throw refuse();
    return { reservation: { id: held.reservationId, workspaceId, amountUsd: amount, plan: state.plan, model }, result: held.result };
  }

  return {
    costOf,

    /** `{credit_limit, total_cost_used, percentage_used}` for the current credit period. */
    async summary(workspace: { id: string; ownerId: number }): Promise<CreditSummary> {
      const state = await resolveBillingState(db, plans, workspace);
      const limitUsd = state.plan.ai_credit;
      // Read-only: a period not opened yet is summed from the ledger rather than opened here.
      const usedUsd = (await repo.findBalance(db, workspace.id, state.periodStart))?.usedUsd ?? (await repo.sumUsageSince(db, workspace.id, state.periodStart));
      return {
        credit_limit: limitUsd,
        total_cost_used: round(usedUsd),
        percentage_used: limitUsd > 0 ? round((usedUsd / limitUsd) * 100, 2) : usedUsd > 0 ? 100 : 0,
      };
    },

    /**
     * The gate without holding credit (a chat that picks its model, an upload to be embedded
     * later): the same refusals as `admit`, and the plan it read, so callers need no second read.
     */
    async check<M extends ModelRef>(request: GateRequest<M>): Promise<Admission<M>> {
      const { workspaceId, state, model } = await gate(request);
      if (!(await creditLeft(workspaceId, state.periodStart, state.plan.ai_credit))) throw refuse();
      return { plan: state.plan, model };
    },

    admit,
    admitWith,

    /** `admit` without a model: holds `estimateUsd` of the workspace's credit (the ledger's own tests; callers use `admit`). */
    async reserve(workspaceId: string, estimateUsd: number): Promise<Reservation> {
      return admit({ workspace: workspaceId, estimate: estimateUsd });
    },

    /** Records the real cost once (per reference id) and frees the reservation, in one statement. Returns the cost charged. */
    async settle(reservation: Reservation, usage: ActualUsage): Promise<number> {
      const costUsd = costOf(usage);
      const charged = await repo.closeReservation(db, reservation.workspaceId, reservation.id, {
        workspaceId: reservation.workspaceId,
        userId: usage.userId ?? null,
        kind: usage.kind,
        model: usage.model,
        inputTokens: usage.inputTokens ?? 0,
        outputTokens: usage.outputTokens ?? 0,
        seconds: usage.seconds ?? 0,
        costUsd,
        referenceId: usage.referenceId,
      });
      return charged ? costUsd : 0;
    },

    /** Frees a reservation without charging (the call failed before using anything). */
    async release(reservation: Reservation): Promise<void> {
      await repo.closeReservation(db, reservation.workspaceId, reservation.id);
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;

function round(value: number, digits = 6): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
