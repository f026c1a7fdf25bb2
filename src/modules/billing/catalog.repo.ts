import { and, asc, desc, eq, inArray, notInArray, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { features, prices, productFeatures, products } from './billing.table.js';

/**
 * The mirrored payment catalog: products, their features and prices (written by webhook events,
 * read by checkout). Like subscriptions, a write older than the stored `last_event_at` is refused.
 */

export interface ProductValues {
  providerProductId: string;
  name: string;
  active: boolean;
  plan: string | null;
  metadata: Record<string, string>;
  lastEventAt: Date;
}

/** Inserts or updates the product unless it has seen a newer event; undefined means stale. */
export async function upsertProduct(tx: DbOrTx, values: ProductValues): Promise<{ id: string } | undefined> {
  const [row] = await tx
    .insert(products)
    .values(values)
    .onConflictDoUpdate({
      target: products.providerProductId,
      set: {
        name: sql.raw('excluded.name'),
        active: sql.raw('excluded.active'),
        plan: sql.raw('excluded.plan'),
        metadata: sql.raw('excluded.metadata'),
        lastEventAt: sql.raw('excluded.last_event_at'),
        updatedAt: new Date(),
      },
      setWhere: sql.raw('"products"."last_event_at" <= excluded.last_event_at'),
    })
    .returning({ id: products.id });
  return row;
}

/** Makes the product's features exactly `keys`, creating missing Feature records. */
export async function syncProductFeatures(tx: DbOrTx, productId: string, keys: string[]): Promise<void> {
  if (!keys.length) {
    await tx.delete(productFeatures).where(eq(productFeatures.productId, productId));
    return;
  }
  await tx
    .insert(features)
    .values(keys.map((key) => ({ key })))
    .onConflictDoNothing({ target: features.key });
  const rows = await tx.select({ id: features.id }).from(features).where(inArray(features.key, keys));
  const ids = rows.map((r) => r.id);
  await tx
    .delete(productFeatures)
    .where(and(eq(productFeatures.productId, productId), notInArray(productFeatures.featureId, ids)));
  await tx
    .insert(productFeatures)
    .values(ids.map((featureId) => ({ productId, featureId })))
    .onConflictDoNothing();
}

export interface PriceValues {
  providerPriceId: string;
  providerProductId: string;
  active: boolean;
  currency: string;
  unitAmount: number | null;
  interval: string | null;
  intervalCount: number | null;
  freq: string | null;
  lastEventAt: Date;
}

/** Inserts or updates the price unless it has seen a newer event; undefined means stale. */
export async function upsertPrice(tx: DbOrTx, values: PriceValues): Promise<{ id: string } | undefined> {
  const [row] = await tx
    .insert(prices)
    .values(values)
    .onConflictDoUpdate({
      target: prices.providerPriceId,
      set: {
        providerProductId: sql.raw('excluded.provider_product_id'),
        active: sql.raw('excluded.active'),
        currency: sql.raw('excluded.currency'),
        unitAmount: sql.raw('excluded.unit_amount'),
        interval: sql.raw('excluded.interval'),
        intervalCount: sql.raw('excluded.interval_count'),
        freq: sql.raw('excluded.freq'),
        lastEventAt: sql.raw('excluded.last_event_at'),
        updatedAt: new Date(),
      },
      setWhere: sql.raw('"prices"."last_event_at" <= excluded.last_event_at'),
    })
    .returning({ id: prices.id });
  return row;
}

/**
 * The price checkout sells for a plan and billing frequency: an active price of an active product
 * whose plan matches. Several candidates: the most recently changed price wins.
 */
export async function findCheckoutPrice(db: DbOrTx, plan: string, freq: string) {
  const [row] = await db
    .select({ providerPriceId: prices.providerPriceId })
    .from(prices)
    .innerJoin(products, eq(products.providerProductId, prices.providerProductId))
    .where(and(eq(products.plan, plan), eq(products.active, true), eq(prices.active, true), eq(prices.freq, freq)))
    .orderBy(desc(prices.lastEventAt), asc(prices.providerPriceId))
    .limit(1);
  return row;
}
