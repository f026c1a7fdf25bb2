import type { DbOrTx } from '../../../db/client.js';
import { isUuid } from '../../../platform/ids.js';
import { findCustomerByProviderId } from '../billing.repo.js';
import { accessGrantingStatuses, endedStatuses } from '../billing.table.js';
import * as subscriptionStore from '../subscriptions.repo.js';
import { findWorkspace } from '../../workspaces/index.js';
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

/**
 * Mirrors a `customer.subscription.*` event under the ordering rules of createWebhookService
 * (webhook.service.ts), then attaches the subscription to its workspace.
 */
export async function applySubscription(
  tx: DbOrTx,
  event: EventEnvelope,
  type: string,
  sub: SubscriptionObject,
  elog: WebhookLog,
): Promise<WebhookOutcome> {
  // 1. The customer account record must exist here.
  const customer = await findCustomerByProviderId(tx, sub.customer);
  if (!customer) {
    elog.warn({ customer: sub.customer, subscription: sub.id }, 'subscription event for a customer with no account here; skipped');
    return 'skipped';
  }

  const fields = subscriptionFields(event, type, sub);
  let existing = await subscriptionStore.lockSubscription(tx, sub.id);
  let inserted: subscriptionStore.SubscriptionRow | undefined;
  if (!existing) {
    inserted = await subscriptionStore.insertSubscription(tx, fields);
    // Lost an insert race with another event of the same subscription: decide against its row.
    if (!inserted) existing = await subscriptionStore.lockSubscription(tx, sub.id);
  }

  let row: subscriptionStore.SubscriptionRow;
  if (existing) {
    const wasEnded = isEnded(existing.status);
    const endsNow = isEnded(fields.status);
    // 2. Ended is final: an event that says otherwise is a late one.
    if (wasEnded && !endsNow) return 'ignored';
    // Older than what was applied: stale, except an ending event for a live subscription (see createWebhookService).
    if (fields.lastEventAt < existing.lastEventAt && !(endsNow && !wasEnded)) return 'stale';
    // 3. Every field, and the items recreated.
    await subscriptionStore.updateSubscriptionFields(tx, existing.id, fields);
    row = { ...existing, ...fields, workspaceId: null };
  } else {
    row = inserted!;
  }
  await subscriptionStore.replaceItems(
    tx,
    row.id,
    sub.items.data.map((item) => ({
      providerItemId: item.id,
      providerPriceId: item.price.id,
      providerProductId: item.price.product,
      quantity: item.quantity ?? 1,
    })),
  );

  // 4. The workspace: the one it is on, else the one named at checkout.
  const previousWorkspace = existing?.workspaceId ?? null;
  const attachedTo = await attach(tx, row, previousWorkspace, elog);
  // It held a workspace with access and no longer does: a subscription that was waiting for
  // that workspace takes it, as it would have had this event been processed before it.
  if (previousWorkspace && existing && isGranting(existing.status) && !(attachedTo === previousWorkspace && isGranting(row.status))) {
    await attachWaiting(tx, previousWorkspace, elog);
  }
  return 'applied';
}

/** Step 4 of the spec; returns the workspace the subscription ends up on. */
async function attach(
  tx: DbOrTx,
  row: subscriptionStore.SubscriptionRow,
  previousWorkspace: string | null,
  elog: WebhookLog,
): Promise<string | null> {
  const named = row.metadata.workspace_id;
  let target = previousWorkspace;
  if (!target && named) {
    if (isUuid(named) && Boolean(await findWorkspace(tx, named))) target = named;
    else elog.warn({ subscription: row.providerSubscriptionId, workspace: named }, 'subscription names an unknown workspace; recorded on no workspace');
  }
  if (!target) return null;

  const other = await subscriptionStore.findOtherGranting(tx, target, row.id);
  // An attached subscription that does not grant access stays where it is: it takes nothing away.
  const keep = other && target === previousWorkspace && !isGranting(row.status);
  if (other && !keep) {
    elog.warn(
      { subscription: row.providerSubscriptionId, workspace: target, holder: other.providerSubscriptionId },
      'workspace already has a different access-granting subscription; subscription recorded but not attached',
    );
    return null;
  }
  if (await subscriptionStore.attachSubscription(tx, row.id, target)) return target;
  elog.warn(
    { subscription: row.providerSubscriptionId, workspace: target },
    'a concurrent event attached another access-granting subscription to the workspace; subscription recorded but not attached',
  );
  return null;
}

async function attachWaiting(tx: DbOrTx, workspaceId: string, elog: WebhookLog): Promise<void> {
  if (!(await findWorkspace(tx, workspaceId))) return;
  for (const waiting of await subscriptionStore.findWaitingSubscriptions(tx, workspaceId)) {
    if (await subscriptionStore.findOtherGranting(tx, workspaceId, waiting.id)) return;
    if (await subscriptionStore.attachSubscription(tx, waiting.id, workspaceId)) {
      elog.info({ subscription: waiting.providerSubscriptionId, workspace: workspaceId }, 'waiting subscription attached to the freed workspace');
      return;
    }
  }
}
