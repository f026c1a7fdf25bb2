import { and, asc, desc, eq, type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, type StatementParam, type StatementValue } from '../../db/client.js';
import { newId } from '../../db/columns.js';
import { type InboxParts, type InboxRecord, inboxStatement } from './webhook/inbox.repo.js';
import type { WebhookOutcome } from './webhook/webhook.schemas.js';
import { prices, products } from './billing.table.js';

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

/** What a catalog event's one statement decided and did (see subscriptions.repo `SubscriptionEventResult`). */
export interface CatalogEventResult {
  decision: 'applied' | 'stale' | 'duplicate';
  previous: WebhookOutcome | null;
  recorded: boolean;
  written: boolean;
}

/**
 * The shared frame of a catalog event's one statement: `snap` (the object's row in the snapshot,
 * with its version), the decision (`duplicate`, `stale` when the row has seen a newer event,
 * else `applied`), the caller's writes (`writes`: `WITH` entries, the upsert named `up`), and the
 * inbox record. The upsert is a compare-and-set on the version read (`cas`), so a concurrent
 * event of the same object that wrote first makes it write nothing (`applied`, `written` false):
 * the caller runs the statement again. Composed once per inbox mode (`catalogStatements`).
 */
const catalogEventSql = (p: StatementParam, inbox: InboxParts, snap: SQL, writes: SQL) =>
  sql`WITH snap AS (${snap}),
      decision AS (
        SELECT ${inbox.previous} AS previous,
          CASE
            WHEN coalesce(${inbox.previous} <> 'failed', false) THEN 'duplicate'
            WHEN (SELECT last_event_at FROM snap) > ${p('lastEventAt')}::timestamptz THEN 'stale'
            ELSE 'applied'
          END AS outcome
      ),
      ${writes},
      ${inbox.record(sql`(SELECT outcome FROM decision)`, sql`(SELECT outcome FROM decision) = 'stale' OR EXISTS (SELECT 1 FROM up)`)}
      SELECT outcome AS decision, previous, EXISTS (SELECT 1 FROM recorded) AS recorded, EXISTS (SELECT 1 FROM up) AS written
      FROM decision`;

/** A catalog event's statement for each inbox mode, from its snapshot and writes. */
function catalogStatements(snap: (p: StatementParam) => SQL, writes: (p: StatementParam) => SQL) {
  const statement = inboxStatement<CatalogEventResult>((p, inbox) => catalogEventSql(p, inbox, snap(p), writes(p)));
  return async (db: DbOrTx, inbox: InboxRecord, values: Record<string, StatementValue>): Promise<CatalogEventResult> => {
    const [row] = await statement(db, inbox, values);
    return row!;
  };
}

/** Whether the decision is to apply, and the compare-and-set of the upsert on `table`'s row read in `snap`. */
const applying = sql`EXISTS (SELECT 1 FROM decision WHERE outcome = 'applied')`;
const cas = (table: string) => sql.raw(`${table}.xmin = (SELECT version FROM snap) AND ${table}.last_event_at <= excluded.last_event_at`);

const productEvent = catalogStatements(
  (p) => sql`SELECT id, xmin AS version, last_event_at FROM products WHERE provider_product_id = ${p('product')}::text`,
  (p) => sql`up AS (
        INSERT INTO products (id, provider_product_id, name, active, plan, metadata, last_event_at)
        SELECT ${p('newId')}::uuid, ${p('product')}::text, ${p('name')}::text, ${p('active')}::boolean, ${p('plan')}::text,
          ${p('metadata')}::jsonb, ${p('lastEventAt')}::timestamptz
        WHERE ${applying}
        ON CONFLICT (provider_product_id) DO UPDATE SET name = excluded.name, active = excluded.active, plan = excluded.plan,
          metadata = excluded.metadata, last_event_at = excluded.last_event_at, updated_at = ${p('now')}::timestamptz
        WHERE ${cas('products')}
        RETURNING id
      ),
      wanted AS (SELECT f.id, f.key FROM jsonb_to_recordset(${p('features')}::jsonb) AS f(id uuid, key text)),
      known AS (SELECT f.id, f.key FROM features f WHERE f.key IN (SELECT key FROM wanted)),
      created AS (
        INSERT INTO features (id, key)
        SELECT id, key FROM wanted WHERE key NOT IN (SELECT key FROM known) AND EXISTS (SELECT 1 FROM up) ORDER BY key
        ON CONFLICT (key) DO UPDATE SET key = excluded.key
        RETURNING id
      ),
      ids AS (SELECT id FROM created UNION ALL SELECT id FROM known),
      removed AS (
        DELETE FROM product_features WHERE product_id = (SELECT id FROM up) AND feature_id NOT IN (SELECT id FROM ids)
      ),
      added AS (
        INSERT INTO product_features (product_id, feature_id) SELECT up.id, ids.id FROM up, ids ON CONFLICT DO NOTHING
      )`,
);

/**
 * A product event in one statement: the decision, the product upserted, its features made exactly
 * `keys` (missing Feature records created: one created by a concurrent statement is locked and
 * returned by the insert's conflict clause, as the snapshot cannot see it), and the inbox record.
 */
export async function applyProductEvent(db: DbOrTx, inbox: InboxRecord, values: ProductValues, keys: string[]): Promise<CatalogEventResult> {
  return productEvent(db, inbox, {
    product: values.providerProductId,
    newId: newId(),
    name: values.name,
    active: values.active,
    plan: values.plan,
    metadata: JSON.stringify(values.metadata),
    lastEventAt: values.lastEventAt.toISOString(),
    now: new Date().toISOString(),
    features: JSON.stringify(keys.map((key) => ({ id: newId(), key }))),
  });
}

const priceEvent = catalogStatements(
  (p) => sql`SELECT id, xmin AS version, last_event_at FROM prices WHERE provider_price_id = ${p('price')}::text`,
  (p) => sql`up AS (
        INSERT INTO prices (id, provider_price_id, provider_product_id, active, currency, unit_amount, interval, interval_count, freq, last_event_at)
        SELECT ${p('newId')}::uuid, ${p('price')}::text, ${p('product')}::text, ${p('active')}::boolean,
          ${p('currency')}::text, ${p('unitAmount')}::bigint, ${p('interval')}::text, ${p('intervalCount')}::integer,
          ${p('freq')}::text, ${p('lastEventAt')}::timestamptz
        WHERE ${applying}
        ON CONFLICT (provider_price_id) DO UPDATE SET provider_product_id = excluded.provider_product_id, active = excluded.active,
          currency = excluded.currency, unit_amount = excluded.unit_amount, interval = excluded.interval,
          interval_count = excluded.interval_count, freq = excluded.freq, last_event_at = excluded.last_event_at,
          updated_at = ${p('now')}::timestamptz
        WHERE ${cas('prices')}
        RETURNING id
      )`,
);

/** A price event in one statement: the decision, the price upserted and the inbox record. */
export async function applyPriceEvent(db: DbOrTx, inbox: InboxRecord, values: PriceValues): Promise<CatalogEventResult> {
  return priceEvent(db, inbox, {
    price: values.providerPriceId,
    newId: newId(),
    product: values.providerProductId,
    active: values.active,
    currency: values.currency,
    unitAmount: values.unitAmount,
    interval: values.interval,
    intervalCount: values.intervalCount,
    freq: values.freq,
    lastEventAt: values.lastEventAt.toISOString(),
    now: new Date().toISOString(),
  });
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
