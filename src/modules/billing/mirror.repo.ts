import { and, asc, desc, eq, inArray, isNull, ne, notInArray, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows } from '../../db/client.js';
import {
  accessGrantingStatuses,
  billingCustomers,
  features,
  prices,
  productFeatures,
  products,
  subscriptionItems,
  subscriptions,
  webhookEvents,
} from './billing.table.js';
import type { WebhookOutcome } from './webhook.schemas.js';

/**
 * Writes of the locally mirrored payment records and of the webhook inbox. Every mirrored object
 * carries `last_event_at`, the `created` time of the newest event applied to it; writes that
 * would go back in time are refused by the SQL itself, so concurrent deliveries cannot undo
 * each other.
 */

export type SubscriptionRow = typeof subscriptions.$inferSelect;
export type WebhookEventRow = typeof webhookEvents.$inferSelect;
const granting = [...accessGrantingStatuses];

/** A unique violation, optionally of one named constraint (drizzle wraps the driver's error). */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, constraint: name, message } = e as { code?: string; constraint?: string; message?: string };
    if (code === '23505') return !constraint || name === constraint || Boolean(message?.includes(constraint));
  }
  return false;
}

/** The driver's own message (drizzle's wrapper adds the query and its parameters). */
export function rootMessage(error: unknown): string {
  let e: unknown = error;
  while (e && typeof e === 'object' && 'cause' in e && (e as { cause?: unknown }).cause) e = (e as { cause: unknown }).cause;
  return e instanceof Error ? e.message : String(e);
}

// --- inbox ------------------------------------------------------------------------------------

export interface InboxEvent {
  id: string;
  type: string;
  createdAt: Date;
  /** The raw body to keep for replay; null when payloads are not kept (retention 0). */
  payload: string | null;
}

/**
 * Claims an event for processing inside the caller's transaction: inserts it, or takes over a
 * previous `failed` attempt (attempts + 1). Returns false when the event is already recorded with
 * a final outcome. A concurrent claim of the same id waits on the primary key until this
 * transaction ends, then sees the committed outcome. The placeholder outcome `failed` is never
 * committed: `finishEvent` replaces it, or the transaction rolls back.
 */
export async function claimEvent(tx: DbOrTx, event: InboxEvent): Promise<boolean> {
  const rows = await tx
    .insert(webhookEvents)
    .values({ id: event.id, type: event.type, createdAt: event.createdAt, outcome: 'failed', attempts: 1, payload: event.payload })
    .onConflictDoUpdate({
      target: webhookEvents.id,
      set: { attempts: sql.raw('"webhook_events"."attempts" + 1'), error: null, receivedAt: new Date(), payload: event.payload },
      setWhere: sql.raw(`"webhook_events"."outcome" = 'failed'`),
    })
    .returning({ id: webhookEvents.id });
  return rows.length > 0;
}

export async function finishEvent(tx: DbOrTx, id: string, outcome: WebhookOutcome, error: string | null = null) {
  await tx.update(webhookEvents).set({ outcome, error }).where(eq(webhookEvents.id, id));
}

export async function findEvent(db: DbOrTx, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = await db.select().from(webhookEvents).where(eq(webhookEvents.id, id));
  return row;
}

/** The event's inbox row, locked until the transaction ends (a replay against a concurrent delivery). */
export async function lockEvent(tx: DbOrTx, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = await tx.select().from(webhookEvents).where(eq(webhookEvents.id, id)).for('update');
  return row;
}

/** Clears payloads received more than `retentionDays` ago (0: every one); returns how many. */
export async function clearOldPayloads(db: DbOrTx, retentionDays: number, limit = 5000): Promise<number> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`UPDATE ${webhookEvents} SET payload = NULL WHERE ${webhookEvents.id} IN (
      SELECT ${webhookEvents.id} FROM ${webhookEvents}
      WHERE ${webhookEvents.payload} IS NOT NULL AND ${webhookEvents.receivedAt} <= now() - make_interval(days => ${retentionDays})
      LIMIT ${limit}
    ) RETURNING ${webhookEvents.id}`,
  );
  return rows.length;
}

export interface WebhookEventSummary {
  id: string;
  type: string;
  createdAt: Date;
  receivedAt: Date;
  outcome: WebhookEventRow['outcome'];
  error: string | null;
  attempts: number;
  hasPayload: boolean;
}

/** The newest events first, optionally of one type or outcome (operators' list). */
export async function listEvents(
  db: DbOrTx,
  filter: { type?: string; outcome?: WebhookEventRow['outcome']; limit: number },
): Promise<WebhookEventSummary[]> {
  return db
    .select({
      id: webhookEvents.id,
      type: webhookEvents.type,
      createdAt: webhookEvents.createdAt,
      receivedAt: webhookEvents.receivedAt,
      outcome: webhookEvents.outcome,
      error: webhookEvents.error,
      attempts: webhookEvents.attempts,
      hasPayload: sql<boolean>`${webhookEvents.payload} IS NOT NULL`,
    })
    .from(webhookEvents)
    .where(
      and(
        filter.type ? eq(webhookEvents.type, filter.type) : undefined,
        filter.outcome ? eq(webhookEvents.outcome, filter.outcome) : undefined,
      ),
    )
    .orderBy(desc(webhookEvents.receivedAt), desc(webhookEvents.id))
    .limit(filter.limit);
}

/** Records an event type we do not handle; false when the id was already recorded. */
export async function recordUnhandled(db: DbOrTx, event: InboxEvent): Promise<boolean> {
  const rows = await db
    .insert(webhookEvents)
    .values({ id: event.id, type: event.type, createdAt: event.createdAt, outcome: 'unhandled', payload: event.payload })
    .onConflictDoNothing({ target: webhookEvents.id })
    .returning({ id: webhookEvents.id });
  return rows.length > 0;
}

/**
 * Records a failed attempt after its transaction rolled back. Never overwrites a final outcome
 * that a concurrent delivery of the same event committed meanwhile.
 */
export async function recordFailure(db: DbOrTx, event: InboxEvent, error: string): Promise<void> {
  await db
    .insert(webhookEvents)
    .values({ id: event.id, type: event.type, createdAt: event.createdAt, outcome: 'failed', error, attempts: 1, payload: event.payload })
    .onConflictDoUpdate({
      target: webhookEvents.id,
      set: { attempts: sql.raw('"webhook_events"."attempts" + 1'), error, receivedAt: new Date(), payload: event.payload },
      setWhere: sql.raw(`"webhook_events"."outcome" = 'failed'`),
    });
}

// --- customers --------------------------------------------------------------------------------

/** Inserts the customer account record; undefined when the user already has one (a concurrent checkout). */
export async function insertCustomer(db: DbOrTx, values: { providerCustomerId: string; userId: number }) {
  const [row] = await db.insert(billingCustomers).values(values).onConflictDoNothing().returning();
  return row;
}

// --- subscriptions ----------------------------------------------------------------------------

export type SubscriptionFields = Omit<
  typeof subscriptions.$inferInsert,
  'id' | 'workspaceId' | 'createdAt' | 'updatedAt'
>;

export interface ItemValues {
  providerItemId: string;
  providerPriceId: string;
  providerProductId: string | null;
  quantity: number;
}

/** The subscription row, locked until the transaction ends. */
export async function lockSubscription(tx: DbOrTx, providerSubscriptionId: string): Promise<SubscriptionRow | undefined> {
  const [row] = await tx
    .select()
    .from(subscriptions)
    .where(eq(subscriptions.providerSubscriptionId, providerSubscriptionId))
    .for('update');
  return row;
}

/** Inserts a new subscription (on no workspace yet); undefined when a concurrent event inserted it first. */
export async function insertSubscription(tx: DbOrTx, values: SubscriptionFields): Promise<SubscriptionRow | undefined> {
  const [row] = await tx
    .insert(subscriptions)
    .values({ ...values, workspaceId: null })
    .onConflictDoNothing({ target: subscriptions.providerSubscriptionId })
    .returning();
  return row;
}

/**
 * Writes every field and takes the subscription off its workspace; `attachSubscription` puts it
 * back (or on another) in the same transaction once the one-granting-subscription rule allows it.
 */
export async function updateSubscriptionFields(tx: DbOrTx, id: string, values: SubscriptionFields): Promise<void> {
  await tx
    .update(subscriptions)
    .set({ ...values, workspaceId: null, updatedAt: new Date() })
    .where(eq(subscriptions.id, id));
}

export async function replaceItems(tx: DbOrTx, subscriptionId: string, items: ItemValues[]): Promise<void> {
  await tx.delete(subscriptionItems).where(eq(subscriptionItems.subscriptionId, subscriptionId));
  if (items.length) await tx.insert(subscriptionItems).values(items.map((item) => ({ ...item, subscriptionId })));
}

/** Another subscription on the workspace that grants access, if any. */
export async function findOtherGranting(db: DbOrTx, workspaceId: string, exceptId: string) {
  const [row] = await db
    .select({ id: subscriptions.id, providerSubscriptionId: subscriptions.providerSubscriptionId })
    .from(subscriptions)
    .where(
      and(
        eq(subscriptions.workspaceId, workspaceId),
        inArray(subscriptions.status, granting),
        ne(subscriptions.id, exceptId),
      ),
    )
    .limit(1);
  return row;
}

export const ONE_GRANTING_INDEX = 'subscriptions_one_granting_per_workspace';

/**
 * Puts the subscription on the workspace inside a savepoint. False when the partial unique index
 * refuses it: a concurrent transaction attached a different access-granting subscription first.
 */
export async function attachSubscription(tx: DbOrTx, id: string, workspaceId: string): Promise<boolean> {
  try {
    await tx.transaction(async (savepoint) => {
      await savepoint.update(subscriptions).set({ workspaceId }).where(eq(subscriptions.id, id));
    });
    return true;
  } catch (error) {
    if (isUniqueViolation(error, ONE_GRANTING_INDEX)) return false;
    throw error;
  }
}

/**
 * Access-granting subscriptions that name the workspace in metadata but are on no workspace,
 * because another one held it when they were processed. Newest event first.
 */
export async function findWaitingSubscriptions(db: DbOrTx, workspaceId: string) {
  return db
    .select({ id: subscriptions.id, providerSubscriptionId: subscriptions.providerSubscriptionId })
    .from(subscriptions)
    .where(
      and(
        isNull(subscriptions.workspaceId),
        inArray(subscriptions.status, granting),
        sql`${subscriptions.metadata}->>'workspace_id' = ${workspaceId}`,
      ),
    )
    .orderBy(desc(subscriptions.lastEventAt), asc(subscriptions.providerSubscriptionId));
}

// --- products, features and prices ------------------------------------------------------------

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
