import { and, desc, eq, gt, inArray, isNull, or } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import {
  accessGrantingStatuses,
  billingCustomers,
  planOverrides,
  prices,
  products,
  subscriptionItems,
  subscriptions,
} from './billing.table.js';

export type SubscriptionRow = typeof subscriptions.$inferSelect;
export type CustomerRow = typeof billingCustomers.$inferSelect;
export type PlanOverrideRow = typeof planOverrides.$inferSelect;

/** The subscription that grants the workspace its plan, if any (at most one, by index). */
export async function findGrantingSubscription(db: DbOrTx, workspaceId: string): Promise<SubscriptionRow | undefined> {
  const [row] = await db
    .select()
    .from(subscriptions)
    .where(and(eq(subscriptions.workspaceId, workspaceId), inArray(subscriptions.status, [...accessGrantingStatuses])))
    .orderBy(desc(subscriptions.updatedAt))
    .limit(1);
  return row;
}

/** The plan keys and billing intervals of a subscription's items (through price → product). */
export async function findSubscriptionItemPlans(db: DbOrTx, subscriptionId: string) {
  return db
    .select({ plan: products.plan, interval: prices.interval, intervalCount: prices.intervalCount })
    .from(subscriptionItems)
    .leftJoin(prices, eq(prices.providerPriceId, subscriptionItems.providerPriceId))
    .leftJoin(
      products,
      eq(products.providerProductId, prices.providerProductId),
    )
    .where(eq(subscriptionItems.subscriptionId, subscriptionId))
    // A stable order: ties between items of one plan must resolve the same way every time.
    .orderBy(subscriptionItems.providerItemId, subscriptionItems.providerPriceId);
}

export async function findCustomerByProviderId(db: DbOrTx, providerCustomerId: string): Promise<CustomerRow | undefined> {
  const [row] = await db.select().from(billingCustomers).where(eq(billingCustomers.providerCustomerId, providerCustomerId));
  return row;
}

export async function findCustomerByUser(db: DbOrTx, userId: number): Promise<CustomerRow | undefined> {
  const [row] = await db.select().from(billingCustomers).where(eq(billingCustomers.userId, userId));
  return row;
}

// --- plan overrides ------------------------------------------------------------------------------

/** The workspace's override if it is in force at `now` (no end, or an end still ahead). */
export async function findActivePlanOverride(db: DbOrTx, workspaceId: string, now: Date): Promise<PlanOverrideRow | undefined> {
  const [row] = await db
    .select()
    .from(planOverrides)
    .where(and(eq(planOverrides.workspaceId, workspaceId), or(isNull(planOverrides.endsAt), gt(planOverrides.endsAt, now))));
  return row;
}

export async function findPlanOverride(db: DbOrTx, workspaceId: string): Promise<PlanOverrideRow | undefined> {
  const [row] = await db.select().from(planOverrides).where(eq(planOverrides.workspaceId, workspaceId));
  return row;
}

/** Sets (or replaces) the workspace's override; a replaced one starts afresh (`created_at`). */
export async function upsertPlanOverride(
  db: DbOrTx,
  values: { workspaceId: string; plan: string; endsAt: Date | null; reason: string; createdBy: string },
): Promise<PlanOverrideRow> {
  const [row] = await db
    .insert(planOverrides)
    .values(values)
    .onConflictDoUpdate({
      target: planOverrides.workspaceId,
      set: { plan: values.plan, endsAt: values.endsAt, reason: values.reason, createdBy: values.createdBy, createdAt: new Date() },
    })
    .returning();
  return row!;
}

/** Removes the override; false when there was none. */
export async function deletePlanOverride(db: DbOrTx, workspaceId: string): Promise<boolean> {
  const rows = await db.delete(planOverrides).where(eq(planOverrides.workspaceId, workspaceId)).returning({ id: planOverrides.workspaceId });
  return rows.length > 0;
}
