import type { DbOrTx } from '../../../db/client.js';
import * as catalogStore from '../catalog.repo.js';
import { planKeys } from '../plan/plans.js';
import * as inboxStore from './inbox.repo.js';
import type { InboxEvent } from './inbox.repo.js';
import { type Duplicate, MAX_RUNS, type Processed } from './subscription.mirror.js';
import type { EventEnvelope, PriceObject, ProductObject } from './webhook.schemas.js';

const paidPlans = planKeys.filter((key) => key !== 'free') as readonly string[];

/**
 * Runs a catalog event's one statement (catalog.repo) until it is decided against the object's
 * newest row: when a concurrent event of the same object wrote first, nothing was written and it
 * runs again. A catalog change may move any workspace's plan, so `workspaces` is empty and the
 * caller drops every billing entry when it applied.
 */
async function decided(object: string, run: () => Promise<catalogStore.CatalogEventResult>): Promise<Processed | Duplicate> {
  for (let attempt = 1; ; attempt++) {
    const result = await run();
    if (result.decision === 'duplicate') return { duplicate: true, previous: result.previous };
    if (result.decision === 'applied' && !result.written) {
      if (attempt >= MAX_RUNS) throw new Error(`${object}: changed concurrently ${attempt} times in a row`);
      continue;
    }
    if (!result.recorded) return { duplicate: true, previous: null };
    return { outcome: result.decision, workspaces: [] };
  }
}

/**
 * Mirrors a `product.*` event and the features its metadata lists, and records the event in the
 * inbox (`inbox`; null for a replay), in one statement; an older event than the last applied is
 * `stale`.
 */
export function applyProduct(
  db: DbOrTx,
  event: EventEnvelope,
  type: string,
  product: ProductObject,
  inbox: InboxEvent | null,
): Promise<Processed | Duplicate> {
  const plan = product.metadata.plan?.trim().toLowerCase() ?? '';
  // Sorted: concurrent products creating the same new features lock them in one order (no deadlock).
  const keys = [...new Set((product.metadata.features ?? '').split(/\s+/).filter(Boolean))].sort();
  const values: catalogStore.ProductValues = {
    providerProductId: product.id,
    name: product.name,
    // A deleted product is inactive; an unknown one is created as such.
    active: type === 'product.deleted' ? false : product.active,
    plan: paidPlans.includes(plan) ? plan : null,
    metadata: product.metadata,
    lastEventAt: new Date(event.created * 1000),
  };
  const parts = inboxStore.inboxRecord(event.id, inbox);
  return decided(`product ${product.id}`, () => catalogStore.applyProductEvent(db, parts, values, keys));
}

/** Mirrors a `price.*` event and records it, as applyProduct. */
export function applyPrice(
  db: DbOrTx,
  event: EventEnvelope,
  type: string,
  price: PriceObject,
  inbox: InboxEvent | null,
): Promise<Processed | Duplicate> {
  const recurring = price.recurring ?? null;
  const values: catalogStore.PriceValues = {
    providerPriceId: price.id,
    providerProductId: price.product,
    active: type === 'price.deleted' ? false : price.active,
    currency: price.currency.toLowerCase(),
    unitAmount: price.unit_amount ?? null,
    interval: recurring?.interval ?? null,
    intervalCount: recurring?.interval_count ?? null,
    freq: recurring ? `${recurring.interval}_${recurring.interval_count}` : null,
    lastEventAt: new Date(event.created * 1000),
  };
  const parts = inboxStore.inboxRecord(event.id, inbox);
  return decided(`price ${price.id}`, () => catalogStore.applyPriceEvent(db, parts, values));
}
