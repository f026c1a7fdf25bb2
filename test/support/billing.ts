import { randomToken } from '../../src/platform/secrets.js';
import {
  billingCustomers,
  creditUsage,
  prices,
  products,
  subscriptionItems,
  subscriptions,
} from '../../src/modules/billing/billing.table.js';
import { forgetCachedAccess, type TestApp } from './app.js';
import type { TestUser } from './factories.js';

export interface SubscriptionFixture {
  status?: 'active' | 'trialing' | 'past_due' | 'canceled' | 'incomplete_expired';
  interval?: 'month' | 'year';
  anchor?: Date;
  trialStart?: Date;
  trialEnd?: Date;
  periodEnd?: Date;
  cancelAt?: Date;
  cancelAtPeriodEnd?: boolean;
  /** The paying user (gets a customer record); defaults to the given payer. */
  payer: TestUser;
}

/**
 * Puts a workspace on a paid plan by writing the mirrored records directly, as the payment
 * webhook would (tests about the webhook itself go through the real route instead).
 */
export async function subscribe(
  t: TestApp,
  workspaceId: string,
  plan: 'pro' | 'team' | 'business' | null,
  fixture: SubscriptionFixture,
) {
  const db = t.deps.database.db;
  const suffix = randomToken(6);
  const now = new Date();
  const interval = fixture.interval ?? 'month';
  const [product] = await db
    .insert(products)
    .values({ providerProductId: `prod_${suffix}`, name: plan ?? 'Plain', plan, lastEventAt: now })
    .returning();
  await db.insert(prices).values({
    providerPriceId: `price_${suffix}`,
    providerProductId: product!.providerProductId,
    unitAmount: 2000,
    interval,
    intervalCount: 1,
    freq: `${interval}_1`,
    lastEventAt: now,
  });
  const [existing] = await db
    .insert(billingCustomers)
    .values({ providerCustomerId: `cus_${suffix}`, userId: fixture.payer.id })
    .onConflictDoNothing()
    .returning();
  const customerId =
    existing?.providerCustomerId ??
    (await db.select().from(billingCustomers)).find((c) => c.userId === fixture.payer.id)!.providerCustomerId;
  const [subscription] = await db
    .insert(subscriptions)
    .values({
      providerSubscriptionId: `sub_${suffix}`,
      providerCustomerId: customerId,
      workspaceId,
      status: fixture.status ?? 'active',
      billingCycleAnchor: fixture.anchor ?? null,
      currentPeriodStart: fixture.anchor ?? null,
      currentPeriodEnd: fixture.periodEnd ?? null,
      trialStart: fixture.trialStart ?? null,
      trialEnd: fixture.trialEnd ?? null,
      cancelAt: fixture.cancelAt ?? null,
      cancelAtPeriodEnd: fixture.cancelAtPeriodEnd ?? false,
      metadata: { workspace_id: workspaceId },
      lastEventAt: now,
    })
    .returning();
  await db.insert(subscriptionItems).values({
    subscriptionId: subscription!.id,
    providerItemId: `si_${suffix}`,
    providerPriceId: `price_${suffix}`,
    providerProductId: product!.providerProductId,
  });
  // Written behind the service's back: cached billing states must not outlive it.
  forgetCachedAccess(t);
  return subscription!;
}

/** Writes a ledger row directly (the cost of some earlier call). */
export async function recordUsage(t: TestApp, workspaceId: string, costUsd: number, createdAt = new Date()) {
  await t.deps.database.db.insert(creditUsage).values({
    workspaceId,
    kind: 'chat',
    model: 'gpt-4.1-mini',
    costUsd,
    referenceId: `ref_${randomToken(8)}`,
    createdAt,
  });
}
