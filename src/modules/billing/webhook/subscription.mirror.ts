import type { DbOrTx } from '../../../db/client.js';
import { isUniqueViolation } from '../../../db/errors.js';
import { isUuid } from '../../../platform/ids.js';
import { accessGrantingStatuses, endedStatuses } from '../billing.table.js';
import * as subscriptionStore from '../subscriptions.repo.js';
import * as inboxStore from './inbox.repo.js';
import type { InboxEvent } from './inbox.repo.js';
import type { WebhookLog } from './webhook.log.js';
import type { EventEnvelope, SubscriptionObject, WebhookOutcome } from './webhook.schemas.js';

const isGranting = (status: string) => (accessGrantingStatuses as readonly string[]).includes(status);
const isEnded = (status: string) => (endedStatuses as readonly string[]).includes(status);
const fromUnix = (seconds: number | null | undefined) => (seconds == null ? null : new Date(seconds * 1000));

function subscriptionFields(event: EventEnvelope, type: string, sub: SubscriptionObject): subscriptionStore.SubscriptionFields {
  const firstItem = (key: 'current_period_start' | 'current_period_end') =>
    sub.items.data.find((item) => item[key] != null)?.[key] ?? null;
  const deleted = type === 'customer.subscription.deleted';
  // `deleted` always ends the subscription, whatever status the object carries.
  const status = deleted && !isEnded(sub.status) ? 'canceled' : sub.status;
  return {
    providerSubscriptionId: sub.id,
    providerCustomerId: sub.customer,
    status,
    currentPeriodStart: fromUnix(sub.current_period_start ?? firstItem('current_period_start')),
    currentPeriodEnd: fromUnix(sub.current_period_end ?? firstItem('current_period_end')),
    billingCycleAnchor: fromUnix(sub.billing_cycle_anchor),
    trialStart: fromUnix(sub.trial_start),
    trialEnd: fromUnix(sub.trial_end),
    cancelAt: fromUnix(sub.cancel_at),
    cancelAtPeriodEnd: sub.cancel_at_period_end ?? false,
    canceledAt: fromUnix(sub.canceled_at ?? (deleted ? event.created : null)),
    endedAt: fromUnix(sub.ended_at ?? (deleted ? event.created : null)),
    metadata: sub.metadata,
    lastEventAt: new Date(event.created * 1000),
  };
}

/** A duplicate delivery: the event was already recorded with a final outcome (null: not yet visible). */
export interface Duplicate {
  duplicate: true;
  previous: WebhookOutcome | null;
}

/** An event processed: its outcome, and the workspaces whose billing state it changed. */
export interface Processed {
  outcome: WebhookOutcome;
  /** Workspaces whose cached billing state must go (a subscription event that applied). */
  workspaces: string[];
}

/** Runs of one event's statement when concurrent events keep changing its object first. */
export const MAX_RUNS = 20;

/**
 * Mirrors a `customer.subscription.*` event under the ordering rules of createWebhookService
 * (webhook.service.ts), attaches the subscription to its workspace and records the event in the
 * inbox (`inbox`; null for a replay), all in one statement (subscriptions.repo
 * `applySubscriptionEvent`). When a concurrent event of the same subscription got there first
 * (nothing was written), the statement runs again on the new state. Throws the unique violation
 * of ONE_GRANTING_INDEX when a concurrent event attached another access-granting subscription to
 * the workspace: the caller runs the event again (it then sees that subscription and records this
 * one on no workspace).
 */
export async function applySubscription(
  db: DbOrTx,
  event: EventEnvelope,
  type: string,
  sub: SubscriptionObject,
  elog: WebhookLog,
  inbox: InboxEvent | null,
): Promise<Processed | Duplicate> {
  const fields = subscriptionFields(event, type, sub);
  const named = sub.metadata.workspace_id;
  const input: subscriptionStore.SubscriptionEvent = {
    fields,
    items: sub.items.data.map((item) => ({
      providerItemId: item.id,
      providerPriceId: item.price.id,
      providerProductId: item.price.product,
      quantity: item.quantity ?? 1,
    })),
    namedWorkspaceId: named && isUuid(named) ? named : null,
    endsNow: isEnded(fields.status),
    grantsNow: isGranting(fields.status),
  };
  const parts = inboxStore.inboxRecord(event.id, inbox);
  for (let run = 1; ; run++) {
    let result: subscriptionStore.SubscriptionEventResult;
    try {
      result = await subscriptionStore.applySubscriptionEvent(db, parts, input);
    } catch (error) {
      if (isUniqueViolation(error, subscriptionStore.ONE_GRANTING_INDEX)) {
        elog.warn(
          { subscription: sub.id, workspace: named },
          'a concurrent event attached another access-granting subscription to the workspace; subscription recorded but not attached',
        );
      }
      throw error;
    }
    if (result.decision === 'duplicate') return { duplicate: true, previous: result.previous };
    if (result.decision === 'applied' && !result.written) {
      // A concurrent event of this subscription wrote first: decide again against its row.
      if (run >= MAX_RUNS) throw new Error(`subscription ${sub.id}: changed concurrently ${run} times in a row`);
      continue;
    }
    if (!result.recorded) return { duplicate: true, previous: null };
    if (result.decision === 'skipped') {
      elog.warn({ customer: sub.customer, subscription: sub.id }, 'subscription event for a customer with no account here; skipped');
    }
    if (result.decision !== 'applied') return { outcome: result.decision, workspaces: [] };

    if (named && !result.previousWorkspace && !result.target) {
      elog.warn({ subscription: sub.id, workspace: named }, 'subscription names an unknown workspace; recorded on no workspace');
    }
    if (result.target && !result.workspaceId) {
      elog.warn(
        { subscription: sub.id, workspace: result.target, holder: result.holder },
        'workspace already has a different access-granting subscription; subscription recorded but not attached',
      );
    }
    if (result.waiting) {
      elog.info({ subscription: result.waiting, workspace: result.previousWorkspace }, 'waiting subscription attached to the freed workspace');
    }
    const workspaces = [result.previousWorkspace, result.workspaceId].filter((id): id is string => id !== null);
    return { outcome: 'applied', workspaces: [...new Set(workspaces)] };
  }
}
