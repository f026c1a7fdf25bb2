import { and, desc, eq, gt, inArray, isNull, or, sql } from 'drizzle-orm';
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

/** A subscription item's plan key and billing interval (through price → product). */
export interface ItemPlan {
  plan: string | null;
  interval: string | null;
  intervalCount: number | null;
}

/**
 * Everything a workspace's billing state is made of, in one statement: the access-granting
 * subscription (if any) with its items' plans and its customer, and the operator's plan override
 * in force at `now`. The hot path (every model call's gate) reads this once.
 */
export async function findBillingInputs(db: DbOrTx, workspaceId: string, now: Date) {
  const granting = db
    .select({ id: subscriptions.id })
    .from(subscriptions)
    .where(and(eq(subscriptions.workspaceId, workspaceId), inArray(subscriptions.status, [...accessGrantingStatuses])))
    .orderBy(desc(subscriptions.updatedAt))
    .limit(1);
  // A stable order: ties between items of one plan must resolve the same way every time.
  const items = sql<ItemPlan[]>`(
    SELECT coalesce(json_agg(json_build_object('plan', ${products.plan}, 'interval', ${prices.interval}, 'intervalCount', ${prices.intervalCount})
      ORDER BY ${subscriptionItems.providerItemId}, ${subscriptionItems.providerPriceId}), '[]'::json)
    FROM ${subscriptionItems}
    LEFT JOIN ${prices} ON ${prices.providerPriceId} = ${subscriptionItems.providerPriceId}
    LEFT JOIN ${products} ON ${products.providerProductId} = ${prices.providerProductId}
    WHERE ${subscriptionItems.subscriptionId} = ${subscriptions.id})`;
  const [row] = await db
    .select({ subscription: subscriptions, customer: billingCustomers, override: planOverrides, items })
    .from(sql`(SELECT 1) AS anchor`)
    .leftJoin(subscriptions, sql`${subscriptions.id} = (${granting})`)
    .leftJoin(billingCustomers, eq(billingCustomers.providerCustomerId, subscriptions.providerCustomerId))
    .leftJoin(
      planOverrides,
      and(eq(planOverrides.workspaceId, workspaceId), or(isNull(planOverrides.endsAt), gt(planOverrides.endsAt, now))),
    );
  return {
    subscription: row?.subscription ?? null,
    customer: row?.customer ?? null,
    override: row?.override ?? null,
    items: row?.subscription ? (row.items ?? []) : [],
  };
}

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

export async function findCustomerByProviderId(db: DbOrTx, providerCustomerId: string): Promise<CustomerRow | undefined> {
  const [row] = await db.select().from(billingCustomers).where(eq(billingCustomers.providerCustomerId, providerCustomerId));
  return row;
}

export async function findCustomerByUser(db: DbOrTx, userId: number): Promise<CustomerRow | undefined> {
  const [row] = await db.select().from(billingCustomers).where(eq(billingCustomers.userId, userId));
  return row;
}

// --- plan overrides ------------------------------------------------------------------------------

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
