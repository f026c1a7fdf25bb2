import { and, asc, desc, eq, inArray, notInArray, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows } from '../../db/client.js';
import { newId } from '../../db/columns.js';
import type { ClaimParts } from './webhook/inbox.repo.js';
import type { WebhookOutcome } from './webhook/webhook.schemas.js';
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

/** A catalog event's one statement: its claim, and the object's id unless stale (or not claimed). */
export interface CatalogEventResult {
  claimed: boolean;
  previous: WebhookOutcome | null;
  id: string | undefined;
}

/**
 * One statement: claims the event (`claim`) and, when claimed, does `upsertProduct` and
 * `syncProductFeatures`. `featuresSynced` is false when a feature key was created by a concurrent
 * transaction after the statement started (its row is not visible to it): the caller then runs
 * `syncProductFeatures`, whose statements see it.
 */
export async function upsertProductForEvent(
  tx: DbOrTx,
  claim: ClaimParts,
  values: ProductValues,
  keys: string[],
): Promise<CatalogEventResult & { featuresSynced: boolean }> {
  const featureRows = JSON.stringify(keys.map((key) => ({ id: newId(), key })));
  const [row] = await queryRows<{ claimed: boolean; previous: WebhookOutcome | null; id: string | null; synced: boolean }>(
    tx,
    sql`WITH ${claim.cte},
      up AS (
        INSERT INTO products (id, provider_product_id, name, active, plan, metadata, last_event_at)
        SELECT ${newId()}::uuid, ${values.providerProductId}, ${values.name}, ${values.active}::boolean, ${values.plan},
          ${JSON.stringify(values.metadata)}::jsonb, ${values.lastEventAt.toISOString()}::timestamptz
        WHERE EXISTS (SELECT 1 FROM claim)
        ON CONFLICT (provider_product_id) DO UPDATE SET name = excluded.name, active = excluded.active, plan = excluded.plan,
          metadata = excluded.metadata, last_event_at = excluded.last_event_at, updated_at = ${new Date().toISOString()}::timestamptz
        WHERE products.last_event_at <= excluded.last_event_at
        RETURNING id
      ),
      wanted AS (SELECT f.id, f.key FROM jsonb_to_recordset(${featureRows}::jsonb) AS f(id uuid, key text)),
      created AS (
        INSERT INTO features (id, key) SELECT id, key FROM wanted WHERE EXISTS (SELECT 1 FROM up) ORDER BY key
        ON CONFLICT (key) DO NOTHING
        RETURNING id
      ),
      ids AS (SELECT id FROM created UNION ALL SELECT f.id FROM features f WHERE f.key IN (SELECT key FROM wanted)),
      removed AS (
        DELETE FROM product_features WHERE product_id = (SELECT id FROM up) AND feature_id NOT IN (SELECT id FROM ids)
      ),
      added AS (
        INSERT INTO product_features (product_id, feature_id) SELECT up.id, ids.id FROM up, ids ON CONFLICT DO NOTHING
      )
      SELECT ${claim.columns}, (SELECT id FROM up) AS id,
        (SELECT count(*) FROM ids) = (SELECT count(*) FROM wanted) AS synced`,
  );
  return { claimed: row!.claimed, previous: row!.previous, id: row!.id ?? undefined, featuresSynced: row!.synced };
}

/** One statement: claims the event (`claim`) and, when claimed, does `upsertPrice`. */
export async function upsertPriceForEvent(tx: DbOrTx, claim: ClaimParts, values: PriceValues): Promise<CatalogEventResult> {
  const [row] = await queryRows<{ claimed: boolean; previous: WebhookOutcome | null; id: string | null }>(
    tx,
    sql`WITH ${claim.cte},
      up AS (
        INSERT INTO prices (id, provider_price_id, provider_product_id, active, currency, unit_amount, interval, interval_count, freq, last_event_at)
        SELECT ${newId()}::uuid, ${values.providerPriceId}, ${values.providerProductId}, ${values.active}::boolean, ${values.currency},
          ${values.unitAmount}::bigint, ${values.interval}, ${values.intervalCount}::integer, ${values.freq},
          ${values.lastEventAt.toISOString()}::timestamptz
        WHERE EXISTS (SELECT 1 FROM claim)
        ON CONFLICT (provider_price_id) DO UPDATE SET provider_product_id = excluded.provider_product_id, active = excluded.active,
          currency = excluded.currency, unit_amount = excluded.unit_amount, interval = excluded.interval,
          interval_count = excluded.interval_count, freq = excluded.freq, last_event_at = excluded.last_event_at,
          updated_at = ${new Date().toISOString()}::timestamptz
        WHERE prices.last_event_at <= excluded.last_event_at
        RETURNING id
      )
      SELECT ${claim.columns}, (SELECT id FROM up) AS id`,
  );
  return { claimed: row!.claimed, previous: row!.previous, id: row!.id ?? undefined };
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
