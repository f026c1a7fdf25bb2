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

/**
 * Mirrors a `customer.subscription.*` event under the ordering rules of createWebhookService
 * (webhook.service.ts), then attaches the subscription to its workspace. Claims the event in the
 * inbox (`claim`; null for a replay, whose inbox row is already locked) and finishes it with the
 * outcome, in the same transaction: two statements (claim + customer + locked subscription; the
 * write + items + workspace + inbox outcome), a third when a freed workspace goes to a waiting
 * subscription. Throws the unique violation of ONE_GRANTING_INDEX when a concurrent transaction
 * attached another access-granting subscription to the workspace: the caller runs the event again
 * (it then sees that subscription and records this one on no workspace).
 */
export async function applySubscription(
  tx: DbOrTx,
  event: EventEnvelope,
  type: string,
  sub: SubscriptionObject,
  elog: WebhookLog,
  inbox: InboxEvent | null,
): Promise<WebhookOutcome | Duplicate> {
  const fields = subscriptionFields(event, type, sub);
  const named = sub.metadata.workspace_id;
  const namedWorkspaceId = named && isUuid(named) ? named : null;
  const state = await subscriptionStore.claimSubscriptionEvent(tx, inboxStore.claimParts(inbox), {
    providerSubscriptionId: sub.id,
    providerCustomerId: sub.customer,
    namedWorkspaceId,
  });
  if (!state.claimed) return { duplicate: true, previous: state.previous };
  const finish = (outcome: WebhookOutcome) => inboxStore.finishEvent(tx, event.id, outcome);

  // 1. The customer account record must exist here.
  if (!state.customerExists) {
    elog.warn({ customer: sub.customer, subscription: sub.id }, 'subscription event for a customer with no account here; skipped');
    await finish('skipped');
    return 'skipped';
  }

  let existing = state.existing;
  for (;;) {
    if (existing) {
      const wasEnded = isEnded(existing.status);
      const endsNow = isEnded(fields.status);
      // 2. Ended is final: an event that says otherwise is a late one.
      const outcome =
        wasEnded && !endsNow
          ? 'ignored'
          : // Older than what was applied: stale, except an ending event for a live subscription (see createWebhookService).
            fields.lastEventAt < existing.lastEventAt && !(endsNow && !wasEnded)
            ? 'stale'
            : null;
      if (outcome) {
        await finish(outcome);
        return outcome;
      }
    }

    // 3. Every field, the items recreated, and 4. the workspace: the one it is on, else the one
    // named at checkout.
    const previousWorkspace = existing?.workspaceId ?? null;
    let target = previousWorkspace;
    if (!target && named) {
      if (namedWorkspaceId && state.namedWorkspaceExists) target = namedWorkspaceId;
      else elog.warn({ subscription: sub.id, workspace: named }, 'subscription names an unknown workspace; recorded on no workspace');
    }
    let written: Awaited<ReturnType<typeof subscriptionStore.writeSubscription>>;
    try {
      written = await subscriptionStore.writeSubscription(tx, {
        existingId: existing?.id,
        fields,
        items: sub.items.data.map((item) => ({
          providerItemId: item.id,
          providerPriceId: item.price.id,
          providerProductId: item.price.product,
          quantity: item.quantity ?? 1,
        })),
        target,
        // An attached subscription that does not grant access stays where it is: it takes nothing away.
        evenIfHeld: target !== null && target === previousWorkspace && !isGranting(fields.status),
        finish: (written) => inboxStore.finishCte(event.id, 'applied', written),
      });
    } catch (error) {
      if (target && isUniqueViolation(error, subscriptionStore.ONE_GRANTING_INDEX)) {
        elog.warn(
          { subscription: sub.id, workspace: target },
          'a concurrent event attached another access-granting subscription to the workspace; subscription recorded but not attached',
        );
      }
      throw error;
    }
    if (!written) {
      // Lost an insert race with another event of the same subscription: decide against its row.
      existing = await subscriptionStore.lockSubscription(tx, sub.id);
      continue;
    }
    const attachedTo = written.workspaceId;
    if (target && !attachedTo) {
      elog.warn(
        { subscription: sub.id, workspace: target, holder: written.holder },
        'workspace already has a different access-granting subscription; subscription recorded but not attached',
      );
    }
    // It held a workspace with access and no longer does: a subscription that was waiting for
    // that workspace takes it, as it would have had this event been processed before it.
    if (previousWorkspace && existing && isGranting(existing.status) && !(attachedTo === previousWorkspace && isGranting(fields.status))) {
      const waiting = await subscriptionStore.attachWaitingSubscription(tx, previousWorkspace);
      if (waiting) elog.info({ subscription: waiting, workspace: previousWorkspace }, 'waiting subscription attached to the freed workspace');
    }
    return 'applied';
  }
}
