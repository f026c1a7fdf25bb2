import type { DbOrTx } from '../../../db/client.js';
import * as catalogStore from '../catalog.repo.js';
import { planKeys } from '../plan/plans.js';
import type { EventEnvelope, PriceObject, ProductObject, WebhookOutcome } from './webhook.schemas.js';

const paidPlans = planKeys.filter((key) => key !== 'free') as readonly string[];

/** Mirrors a `product.*` event and the features its metadata lists; an older event than the last applied is `stale`. */
export async function applyProduct(tx: DbOrTx, event: EventEnvelope, type: string, product: ProductObject): Promise<WebhookOutcome> {
  const plan = product.metadata.plan?.trim().toLowerCase() ?? '';
  const row = await catalogStore.upsertProduct(tx, {
    providerProductId: product.id,
    name: product.name,
    // A deleted product is inactive; an unknown one is created as such.
    active: type === 'product.deleted' ? false : product.active,
    plan: paidPlans.includes(plan) ? plan : null,
    metadata: product.metadata,
    lastEventAt: new Date(event.created * 1000),
  });
  if (!row) return 'stale';
  // Sorted: concurrent products creating the same new features lock them in one order (no deadlock).
  const keys = [...new Set((product.metadata.features ?? '').split(/\s+/).filter(Boolean))].sort();
  await catalogStore.syncProductFeatures(tx, row.id, keys);
  return 'applied';
}

/** Mirrors a `price.*` event; an older event than the last applied is `stale`. */
export async function applyPrice(tx: DbOrTx, event: EventEnvelope, type: string, price: PriceObject): Promise<WebhookOutcome> {
  const recurring = price.recurring ?? null;
  const row = await catalogStore.upsertPrice(tx, {
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
  return row ? 'applied' : 'stale';
}
