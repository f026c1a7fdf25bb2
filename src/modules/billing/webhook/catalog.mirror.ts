import type { DbOrTx } from '../../../db/client.js';
import * as catalogStore from '../catalog.repo.js';
import { planKeys } from '../plan/plans.js';
import * as inboxStore from './inbox.repo.js';
import type { InboxEvent } from './inbox.repo.js';
import type { Duplicate } from './subscription.mirror.js';
import type { EventEnvelope, PriceObject, ProductObject, WebhookOutcome } from './webhook.schemas.js';

const paidPlans = planKeys.filter((key) => key !== 'free') as readonly string[];

/**
 * Mirrors a `product.*` event and the features its metadata lists; an older event than the last
 * applied is `stale`. Claims the event in the inbox in the same statement (`inbox`; null for a
 * replay, whose inbox row is already locked) and finishes it with the outcome.
 */
export async function applyProduct(
  tx: DbOrTx,
  event: EventEnvelope,
  type: string,
  product: ProductObject,
  inbox: InboxEvent | null,
): Promise<WebhookOutcome | Duplicate> {
  const plan = product.metadata.plan?.trim().toLowerCase() ?? '';
  // Sorted: concurrent products creating the same new features lock them in one order (no deadlock).
  const keys = [...new Set((product.metadata.features ?? '').split(/\s+/).filter(Boolean))].sort();
  const result = await catalogStore.upsertProductForEvent(
    tx,
    inboxStore.claimParts(inbox),
    {
      providerProductId: product.id,
      name: product.name,
      // A deleted product is inactive; an unknown one is created as such.
      active: type === 'product.deleted' ? false : product.active,
      plan: paidPlans.includes(plan) ? plan : null,
      metadata: product.metadata,
      lastEventAt: new Date(event.created * 1000),
    },
    keys,
  );
  if (!result.claimed) return { duplicate: true, previous: result.previous };
  if (result.id && !result.featuresSynced) await catalogStore.syncProductFeatures(tx, result.id, keys);
  const outcome = result.id ? 'applied' : 'stale';
  await inboxStore.finishEvent(tx, event.id, outcome);
  return outcome;
}

/** Mirrors a `price.*` event; an older event than the last applied is `stale`. Claims and finishes as applyProduct. */
export async function applyPrice(
  tx: DbOrTx,
  event: EventEnvelope,
  type: string,
  price: PriceObject,
  inbox: InboxEvent | null,
): Promise<WebhookOutcome | Duplicate> {
  const recurring = price.recurring ?? null;
  const result = await catalogStore.upsertPriceForEvent(tx, inboxStore.claimParts(inbox), {
    providerPriceId: price.id,
    providerProductId: price.product,
    active: type === 'price.deleted' ? false : price.active,
    currency: price.currency.toLowerCase(),
    unitAmount: price.unit_amount ?? null,
    interval: recurring?.interval ?? null,
    intervalCount: recurring?.interval_count ?? null,
    freq: recurring ? `${recurring.interval}_${recurring.interval_count}` : null,
    lastEventAt: new Date(event.created * 1000),
  });
  if (!result.claimed) return { duplicate: true, previous: result.previous };
  const outcome = result.id ? 'applied' : 'stale';
  await inboxStore.finishEvent(tx, event.id, outcome);
  return outcome;
}
