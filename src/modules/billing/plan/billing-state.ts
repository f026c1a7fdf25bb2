import type { DbOrTx } from '../../../db/client.js';
import type { PlanModelRules } from '../../models/index.js';
import * as repo from '../billing.repo.js';
import { type Plan, type PlanKey, planIncludesModel, planKeys, type Plans } from './plans.js';

/** A workspace's billing position at one instant: plan, subscription and credit period. */
export interface BillingState {
  plan: Plan;
  /** The access-granting subscription, or null on the free plan. */
  subscription: repo.SubscriptionRow | null;
  /** Billing interval of the plan's price (`month` on free). */
  interval: string;
  /** Start of the current credit period (inclusive). */
  periodStart: Date;
  /** When the credit renews: the trial end while trialing, the next credit month on a paid plan, null on free. */
  renewsAt: Date | null;
  /** The user who pays: the subscription customer's user, else the workspace owner. */
  billingContactId: number;
  /** The operator's plan override in force (it decided `plan`), or null. */
  override: repo.PlanOverrideRow | null;
}

const planRank = (key: PlanKey) => planKeys.indexOf(key);
const EPOCH = new Date(0);

/** Adds calendar months in UTC, clamping the day (Jan 31 + 1 month = Feb 28/29), like the provider. */
export function addMonths(date: Date, months: number): Date {
  const result = new Date(date);
  const day = result.getUTCDate();
  result.setUTCDate(1);
  result.setUTCMonth(result.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(result.getUTCFullYear(), result.getUTCMonth() + 1, 0)).getUTCDate();
  result.setUTCDate(Math.min(day, lastDay));
  return result;
}

/** The credit month containing `now` for a subscription anchored at `anchor`. */
export function creditMonth(anchor: Date, now: Date): { start: Date; end: Date } {
  if (now < anchor) return { start: anchor, end: addMonths(anchor, 1) };
  let months = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  while (months > 0 && addMonths(anchor, months) > now) months--;
  while (addMonths(anchor, months + 1) <= now) months++;
  return { start: addMonths(anchor, months), end: addMonths(anchor, months + 1) };
}

/**
 * The billing state, with an operator's plan override (admin CLI) in force winning over the
 * subscription's plan. The override changes the plan only: the credit period stays the
 * subscription's when it has one (trial, paid month); otherwise a paid override gets monthly
 * credit anchored at the moment it was set, and a free one the workspace's lifetime.
 */
export async function resolveBillingState(
  db: DbOrTx,
  plans: Plans,
  workspace: { id: string; ownerId: number },
  now = new Date(),
): Promise<BillingState> {
  return billingStateFrom(plans, workspace, await repo.findBillingInputs(db, workspace.id, now), now);
}

/** What a billing state is computed from (one statement; cached by the credit gate). */
export type BillingInputs = Awaited<ReturnType<typeof repo.findBillingInputs>>;

/** The billing state from its inputs at `now` (pure: the credit periods depend on the time). */
export function billingStateFrom(plans: Plans, workspace: { id: string; ownerId: number }, inputs: BillingInputs, now: Date): BillingState {
  const fromSubscription = subscriptionState(plans, workspace, inputs, now);
  const override = inputs.override && (!inputs.override.endsAt || inputs.override.endsAt > now) ? inputs.override : null;
  if (!override || !isPlanKey(override.plan)) return { ...fromSubscription, override: null };
  const plan = plans[override.plan];
  if (fromSubscription.renewsAt || plan.key === 'free') return { ...fromSubscription, plan, override };
  const month = creditMonth(override.createdAt, now);
  return { ...fromSubscription, plan, periodStart: month.start, renewsAt: month.end, override };
}

const isPlanKey = (key: string): key is PlanKey => (planKeys as readonly string[]).includes(key);

function subscriptionState(
  plans: Plans,
  workspace: { id: string; ownerId: number },
  { subscription, items, customer }: Awaited<ReturnType<typeof repo.findBillingInputs>>,
  now: Date,
): Omit<BillingState, 'override'> {
  if (!subscription) {
    return {
      plan: plans.free,
      subscription: null,
      interval: 'month',
      periodStart: EPOCH,
      renewsAt: null,
      billingContactId: workspace.ownerId,
    };
  }

  // The highest plan among the subscription's items (the first item wins a tie, items in
  // provider-id order); a product without a plan key counts as free.
  let planKey: PlanKey = 'free';
  let interval = 'month';
  let chosen = false;
  for (const item of items) {
    const key = (planKeys as readonly string[]).includes(item.plan ?? '') ? (item.plan as PlanKey) : 'free';
    if (planRank(key) > planRank(planKey) || (!chosen && planRank(key) === planRank(planKey))) {
      chosen = true;
      planKey = key;
      if (item.interval) interval = item.interval;
    }
  }

  const billingContactId = customer?.userId ?? workspace.ownerId;
  const plan = plans[planKey];

  if (subscription.status === 'trialing' && subscription.trialEnd) {
    return {
      plan,
      subscription,
      interval,
      periodStart: subscription.trialStart ?? subscription.createdAt,
      renewsAt: subscription.trialEnd,
      billingContactId,
    };
  }
  if (planKey === 'free') {
    return { plan, subscription, interval, periodStart: EPOCH, renewsAt: null, billingContactId };
  }
  const anchor = subscription.billingCycleAnchor ?? subscription.currentPeriodStart ?? subscription.createdAt;
  const month = creditMonth(anchor, now);
  return { plan, subscription, interval, periodStart: month.start, renewsAt: month.end, billingContactId };
}

/** The models listing's view of a workspace's plan (models receives it through src/deps.ts). */
export function createPlanModelRules(db: DbOrTx, plans: Plans): PlanModelRules {
  return async (workspace) => {
    const { plan } = await resolveBillingState(db, plans, workspace);
    return { includes: (model) => planIncludesModel(plan, model), defaultModel: plan.default_model };
  };
}
