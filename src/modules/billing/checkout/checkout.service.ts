import type { Logger } from 'pino';
import type { Db } from '../../../db/client.js';
import { sha256Hex } from '../../../platform/secrets.js';
import { requireMember } from '../../workspaces/index.js';
import { isOwnerOrAdmin } from '../../workspaces/index.js';
import { findUserSummary } from '../../users/index.js';
import { findCustomerByUser, findGrantingSubscription, type CustomerRow } from '../billing.repo.js';
import { billingErrors } from '../billing.errors.js';
import type { CheckoutBody, RedirectOut } from './checkout.schemas.js';
import * as catalogStore from '../catalog.repo.js';
import * as subscriptionStore from '../subscriptions.repo.js';
import { PaymentProviderError, type PaymentProvider } from '../payment-provider.js';
import type { Plans } from '../plan/plans.js';
import { resolveBillingState } from '../plan/billing-state.js';

/**
 * Billing actions: checkout (owner or admin) and the billing portal (the billing contact only).
 * Both only talk to the provider; the subscription itself arrives later through the webhook.
 * No provider call happens inside a database transaction.
 */
export function createCheckoutService(deps: {
  db: Db;
  plans: Plans;
  provider: PaymentProvider | null;
  publicBaseUrl: string;
  log: Pick<Logger, 'error'>;
}) {
  const { db, plans, provider, publicBaseUrl, log } = deps;
  const billingPage = (workspaceId: string) => `${publicBaseUrl}/workspaces/${workspaceId}/billing/`;

  function configured(): PaymentProvider {
    if (!provider) throw billingErrors.notConfigured();
    return provider;
  }

  /** Provider failures become 502 with a generic body; the cause goes to the log. */
  async function upstream<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof PaymentProviderError) {
        log.error({ err: error }, 'payment provider call failed');
        throw billingErrors.providerError();
      }
      throw error;
    }
  }

  /**
   * The caller's customer account record, created on first checkout: the provider customer first
   * (with an idempotency key, so concurrent checkouts of one user get one customer), then the row;
   * the unique user id decides a race and the loser uses the winner's row.
   */
  async function customerFor(p: PaymentProvider, userId: number): Promise<CustomerRow> {
    const existing = await findCustomerByUser(db, userId);
    if (existing) return existing;
    const user = await findUserSummary(db, userId);
    if (!user) throw new Error(`user ${userId} not found`);
    const idempotencyKey = `customer-${userId}-${sha256Hex(`${user.email}\n${user.name}`).slice(0, 16)}`;
    const created = await upstream(() => p.createCustomer({ email: user.email, name: user.name, userId, idempotencyKey }));
    const row = await subscriptionStore.insertCustomer(db, { providerCustomerId: created.id, userId });
    return row ?? (await findCustomerByUser(db, userId))!;
  }

  return {
    async checkout(userId: number, workspaceId: string, input: CheckoutBody): Promise<RedirectOut> {
      const access = await requireMember(db, workspaceId, userId, { write: true });
      if (!isOwnerOrAdmin(access)) throw billingErrors.ownerOrAdminOnly();
      const p = configured();
      // Plan changes of a paying workspace go through the portal, never a second subscription.
      if (await findGrantingSubscription(db, workspaceId)) throw billingErrors.alreadySubscribed();
      const price = await catalogStore.findCheckoutPrice(db, input.plan, `${input.interval}_1`);
      if (!price) throw billingErrors.planUnavailable(input.plan, input.interval);
      const customer = await customerFor(p, userId);
      const session = await upstream(() =>
        p.createCheckoutSession({
          customerId: customer.providerCustomerId,
          priceId: price.providerPriceId,
          workspaceId,
          userId,
          successUrl: `${billingPage(workspaceId)}?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
          cancelUrl: `${billingPage(workspaceId)}?checkout=canceled`,
        }),
      );
      return { url: session.url };
    },

    /** Allowed while the workspace is archived: stopping payment for it must stay possible. */
    async portal(userId: number, workspaceId: string): Promise<RedirectOut> {
      const access = await requireMember(db, workspaceId, userId);
      const state = await resolveBillingState(db, plans, access.workspace);
      if (state.billingContactId !== userId) throw billingErrors.notBillingContact();
      const p = configured();
      const customer = await findCustomerByUser(db, userId);
      if (!customer) throw billingErrors.noBillingAccount();
      const session = await upstream(() =>
        p.createPortalSession({ customerId: customer.providerCustomerId, returnUrl: billingPage(workspaceId) }),
      );
      return { url: session.url };
    },
  };
}

export type CheckoutService = ReturnType<typeof createCheckoutService>;
