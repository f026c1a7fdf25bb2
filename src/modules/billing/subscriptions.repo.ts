import { and, asc, desc, eq, inArray, isNull, ne, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import { accessGrantingStatuses, billingCustomers, subscriptionItems, subscriptions } from './billing.table.js';

/**
 * Writes of the locally mirrored customers and subscriptions (with their items). Every mirrored
 * object carries `last_event_at`, the `created` time of the newest event applied to it; writes
 * that would go back in time are refused by the SQL itself, so concurrent deliveries cannot undo
 * each other.
 */

export type SubscriptionRow = typeof subscriptions.$inferSelect;
const granting = [...accessGrantingStatuses];

/** Inserts the customer account record; undefined when the user already has one (a concurrent checkout). */
export async function insertCustomer(db: DbOrTx, values: { providerCustomerId: string; userId: number }) {
  const [row] = await db.insert(billingCustomers).values(values).onConflictDoNothing().returning();
  return row;
}

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
