import { billingCustomers } from '../../src/modules/billing/billing.table.js';
import * as catalogStore from '../../src/modules/billing/catalog.repo.js';
import { type FakePaymentApi, startFakePaymentApi } from '../support/fake-payment-api.js';
import { type MatrixRow, statuses, type World } from './world.js';

/**
 * The matrix app's billing configuration: a webhook secret, and the fake payment API that
 * `startBillingFakes` starts (it must run before the app is built, so the role-matrix test
 * registers it ahead of useTestApp and passes this object, filled by then, as the app's env).
 */
export const billingEnv: Record<string, string> = { PAYMENT_WEBHOOK_SECRET: 'whsec_role_matrix_secret_0123456789' };
let fake: FakePaymentApi | undefined;

export async function startBillingFakes(): Promise<void> {
  fake = await startFakePaymentApi();
  Object.assign(billingEnv, { STRIPE_SECRET_KEY: 'sk_test_role_matrix', STRIPE_API_BASE: fake.url });
}

export async function stopBillingFakes(): Promise<void> {
  await fake?.close();
}

/** A mirrored active Pro product with an active monthly price, as the webhook would have left it. */
async function proCatalog(w: World): Promise<void> {
  const db = w.t.deps.database.db;
  const at = new Date(Date.now() - 60_000);
  await catalogStore.upsertProduct(db, { providerProductId: 'prod_matrix_pro', name: 'Pro', active: true, plan: 'pro', metadata: { plan: 'pro' }, lastEventAt: at });
  await catalogStore.upsertPrice(db, {
    providerPriceId: 'price_matrix_pro_month',
    providerProductId: 'prod_matrix_pro',
    active: true,
    currency: 'usd',
    unitAmount: 2000,
    interval: 'month',
    intervalCount: 1,
    freq: 'month_1',
    lastEventAt: at,
  });
}

/** Payment webhook and billing actions. */
export const billingRows: MatrixRow[] = [
  {
    // No user authentication at all: every caller gets the answer for an unsigned request.
    route: 'POST /api/subscriptions/webhook',
    label: 'unsigned',
    request: () => ({ url: '/api/subscriptions/webhook', body: { id: 'evt_1', type: 'product.created', created: 1, data: { object: {} } } }),
    expect: statuses(400, 400, 400, 400, 400),
  },
  {
    route: 'POST /api/workspaces/:id/billing/checkout/',
    request: async (w) => {
      await proCatalog(w);
      return { url: `/api/workspaces/${w.workspace.id}/billing/checkout/`, body: { plan: 'pro', interval: 'month' } };
    },
    expect: statuses(200, 200, 403, 403, 403),
  },
  {
    // On the free plan the billing contact is the owner; they need a customer account record.
    route: 'POST /api/workspaces/:id/billing/portal/',
    request: async (w) => {
      await w.t.deps.database.db.insert(billingCustomers).values({ providerCustomerId: `cus_matrix_${w.users.owner.id}`, userId: w.users.owner.id });
      return { url: `/api/workspaces/${w.workspace.id}/billing/portal/` };
    },
    expect: statuses(200, 403, 403, 403, 403),
  },
];
