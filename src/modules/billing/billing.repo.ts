import { and, desc, eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { users } from '../users/users.table.js';
import {
  accessGrantingStatuses,
  billingCustomers,
  prices,
  products,
  subscriptionItems,
  subscriptions,
} from './billing.table.js';

export type SubscriptionRow = typeof subscriptions.$inferSelect;
export type CustomerRow = typeof billingCustomers.$inferSelect;

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

export async function findUserSummary(db: DbOrTx, userId: number) {
  const [row] = await db.select({ id: users.id, name: users.name, email: users.email }).from(users).where(eq(users.id, userId));
  return row;
}
