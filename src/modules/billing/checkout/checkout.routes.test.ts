import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, useTestApp } from '../../../../test/support/app.js';
import { addMember, newUser, newWorkspace, type TestUser, type TestWorkspace } from '../../../../test/support/factories.js';
import { type FakePaymentApi, startFakePaymentApi } from '../../../../test/support/fake-payment-api.js';
import { billingCustomers, subscriptions } from '../billing.table.js';
import * as catalogStore from '../catalog.repo.js';
import { parseApiBase } from '../payment-provider.js';

// The fake provider must be listening before the app reads STRIPE_API_BASE: the env object is
// filled in a beforeAll registered ahead of useTestApp's.
let fake: FakePaymentApi;
const env: Record<string, string> = {};
beforeAll(async () => {
  fake = await startFakePaymentApi();
  Object.assign(env, { STRIPE_SECRET_KEY: 'sk_test_fake', STRIPE_API_BASE: `${fake.url}/v1` });
});
afterAll(async () => {
  await fake?.close();
});
const t = useTestApp(env);
beforeEach(() => fake.reset());

const db = () => t.deps.database.db;

interface World {
  owner: TestUser;
  admin: TestUser;
  member: TestUser;
  outsider: TestUser;
  ws: TestWorkspace;
}

async function world(): Promise<World> {
  const [owner, admin, member, outsider] = await Promise.all([
    newUser(t, { name: 'Olive Owner' }),
    newUser(t),
    newUser(t),
    newUser(t),
  ]);
  const ws = await newWorkspace(t, owner!);
  await addMember(t, ws, admin!, 'admin');
  await addMember(t, ws, member!, 'member');
  await newWorkspace(t, outsider!, 'Elsewhere');
  return { owner: owner!, admin: admin!, member: member!, outsider: outsider!, ws };
}

/** A mirrored product with its monthly and yearly prices. */
async function catalog(plan = 'pro', options: { productActive?: boolean; priceActive?: boolean } = {}) {
  const at = new Date(Date.now() - 60_000);
  await catalogStore.upsertProduct(db(), {
    providerProductId: `prod_${plan}`,
    name: plan,
    active: options.productActive ?? true,
    plan,
    metadata: { plan },
    lastEventAt: at,
  });
  for (const [interval, suffix] of [
    ['month', 'monthly'],
    ['year', 'yearly'],
  ] as const) {
    await catalogStore.upsertPrice(db(), {
      providerPriceId: `price_${plan}_${suffix}`,
      providerProductId: `prod_${plan}`,
      active: options.priceActive ?? true,
      currency: 'usd',
      unitAmount: 2000,
      interval,
      intervalCount: 1,
      freq: `${interval}_1`,
      lastEventAt: at,
    });
  }
}

const checkoutUrl = (ws: TestWorkspace) => `/api/workspaces/${ws.id}/billing/checkout/`;
const portalUrl = (ws: TestWorkspace) => `/api/workspaces/${ws.id}/billing/portal/`;

describe('checkout', () => {
  it('creates the customer and a subscription checkout session for the workspace', async () => {
    const w = await world();
    await catalog('pro');
    await catalog('team');
    const res = await t.post(checkoutUrl(w.ws), { plan: 'team', interval: 'year' }, w.owner);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ url: expect.stringMatching(/^https:\/\/checkout\.fake-payments\.test\/c\/pay\/cs_test_/) });

    const [customerCall] = fake.calls('/v1/customers');
    expect(customerCall?.form).toMatchObject({ email: w.owner.email, name: 'Olive Owner', 'metadata[user_id]': String(w.owner.id) });
    expect(customerCall?.headers.authorization).toBe('Bearer sk_test_fake');
    expect(customerCall?.headers['idempotency-key']).toMatch(new RegExp(`^customer-${w.owner.id}-`));
    const [row] = await db().select().from(billingCustomers).where(eq(billingCustomers.userId, w.owner.id));
    expect(row?.providerCustomerId).toMatch(/^cus_fake/);

    const [session] = fake.calls('/v1/checkout/sessions');
    expect(session?.form).toMatchObject({
      mode: 'subscription',
      customer: row!.providerCustomerId,
      'line_items[0][price]': 'price_team_yearly',
      'line_items[0][quantity]': '1',
      client_reference_id: w.ws.id,
      'metadata[workspace_id]': w.ws.id,
      'metadata[user_id]': String(w.owner.id),
      'subscription_data[metadata][workspace_id]': w.ws.id,
      success_url: `http://localhost:8000/workspaces/${w.ws.id}/billing/?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `http://localhost:8000/workspaces/${w.ws.id}/billing/?checkout=canceled`,
    });
  });

  it('reuses the caller’s customer account record on later checkouts', async () => {
    const w = await world();
    await catalog('pro');
    const other = await newWorkspace(t, w.admin, 'Second');
    expect((await t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' }, w.admin)).statusCode).toBe(200);
    expect((await t.post(checkoutUrl(other), { plan: 'pro', interval: 'month' }, w.admin)).statusCode).toBe(200);
    expect(fake.calls('/v1/customers')).toHaveLength(1);
    const sessions = fake.calls('/v1/checkout/sessions');
    expect(sessions.map((s) => s.form['metadata[workspace_id]'])).toEqual([w.ws.id, other.id]);
    expect(new Set(sessions.map((s) => s.form.customer)).size).toBe(1);
    expect(sessions[0]?.form['line_items[0][price]']).toBe('price_pro_monthly');
  });

  it('creates one customer account record when one user checks out concurrently', async () => {
    const w = await world();
    await catalog('pro');
    const results = await Promise.all(
      Array.from({ length: 4 }, () => t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' }, w.owner)),
    );
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    expect(await db().select().from(billingCustomers)).toHaveLength(1);
    expect(new Set(fake.calls('/v1/checkout/sessions').map((s) => s.form.customer)).size).toBe(1);
  });

  it.each([['member'], ['outsider']] as const)('refuses a %s with 403 and calls nothing', async (role) => {
    const w = await world();
    await catalog('pro');
    const res = await t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' }, w[role]);
    expect(res.statusCode).toBe(403);
    expect(fake.requests).toEqual([]);
  });

  it('refuses an anonymous caller with 403', async () => {
    const w = await world();
    expect((await t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' })).statusCode).toBe(403);
  });

  it.each([[{}], [{ plan: 'free', interval: 'month' }], [{ plan: 'pro', interval: 'week' }], [{ plan: 'pro' }]])(
    'refuses body %j with 400',
    async (body) => {
      const w = await world();
      const res = await t.post(checkoutUrl(w.ws), body, w.owner);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation_error');
    },
  );

  it('answers 409 plan_unavailable when no active price of an active product matches', async () => {
    const w = await world();
    const refused = async (plan: string, interval: string) => {
      const res = await t.post(checkoutUrl(w.ws), { plan, interval }, w.owner);
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('plan_unavailable');
    };
    await refused('pro', 'month');
    await catalog('pro', { productActive: false });
    await refused('pro', 'month');
    await catalog('team', { priceActive: false });
    await refused('team', 'year');
    expect(fake.requests).toEqual([]);
  });

  it('answers 409 already_subscribed while an access-granting subscription is on the workspace', async () => {
    const w = await world();
    await catalog('pro');
    await db().insert(subscriptions).values({
      providerSubscriptionId: 'sub_1',
      providerCustomerId: 'cus_1',
      workspaceId: w.ws.id,
      status: 'past_due',
      lastEventAt: new Date(),
    });
    const res = await t.post(checkoutUrl(w.ws), { plan: 'team', interval: 'month' }, w.owner);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('already_subscribed');
    await db().update(subscriptions).set({ status: 'canceled' });
    expect((await t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' }, w.owner)).statusCode).toBe(200);
  });

  it('answers 409 workspace_archived on an archived workspace', async () => {
    const w = await world();
    await catalog('pro');
    await t.patch(`/api/workspaces/${w.ws.id}/`, { status: 'archived' }, w.owner);
    const res = await t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' }, w.owner);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('workspace_archived');
  });

  // The SDK retries a 5xx once (maxNetworkRetries 1), never a 4xx.
  it.each([
    [400, 1],
    [500, 2],
  ])('answers 502 with a generic body when the provider answers %i (%i attempts)', async (status, attempts) => {
    const w = await world();
    await catalog('pro');
    fake.failNext('/v1/checkout/sessions', status, 2);
    const res = await t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' }, w.owner);
    expect(res.statusCode).toBe(502);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'payment_provider_error' });
    expect(res.body).not.toContain('Injected');
    expect(fake.calls('/v1/checkout/sessions')).toHaveLength(attempts);
  });

  it('answers 502 and records no customer when creating the customer fails', async () => {
    const w = await world();
    await catalog('pro');
    fake.failNext('/v1/customers', 402);
    expect((await t.post(checkoutUrl(w.ws), { plan: 'pro', interval: 'month' }, w.owner)).statusCode).toBe(502);
    expect(await db().select().from(billingCustomers)).toEqual([]);
  });
});

describe('billing portal', () => {
  async function withCustomer(user: TestUser, id = `cus_${user.id}`) {
    await db().insert(billingCustomers).values({ providerCustomerId: id, userId: user.id });
    return id;
  }

  it('opens the portal for the billing contact (the owner on the free plan)', async () => {
    const w = await world();
    const customer = await withCustomer(w.owner);
    const res = await t.post(portalUrl(w.ws), {}, w.owner);
    expect(res.statusCode).toBe(200);
    expect(res.json().url).toMatch(/^https:\/\/billing\.fake-payments\.test\/p\/session\//);
    expect(fake.calls('/v1/billing_portal/sessions')[0]?.form).toEqual({
      customer,
      return_url: `http://localhost:8000/workspaces/${w.ws.id}/billing/`,
    });
  });

  it('refuses everyone but the billing contact with 403', async () => {
    const w = await world();
    await withCustomer(w.owner);
    await withCustomer(w.admin);
    for (const user of [w.admin, w.member, w.outsider]) {
      const res = await t.post(portalUrl(w.ws), {}, user);
      expect(res.statusCode).toBe(403);
    }
    expect((await t.post(portalUrl(w.ws), {}, w.admin)).json().code).toBe('not_billing_contact');
    expect((await t.post(portalUrl(w.ws), {})).statusCode).toBe(403);
    expect(fake.requests).toEqual([]);
  });

  it('follows the subscription: the paying admin becomes the contact, the owner no longer is', async () => {
    const w = await world();
    const customer = await withCustomer(w.admin);
    await withCustomer(w.owner);
    await db().insert(subscriptions).values({
      providerSubscriptionId: 'sub_1',
      providerCustomerId: customer,
      workspaceId: w.ws.id,
      status: 'active',
      lastEventAt: new Date(),
    });
    expect((await t.post(portalUrl(w.ws), {}, w.admin)).statusCode).toBe(200);
    expect(fake.calls('/v1/billing_portal/sessions')[0]?.form.customer).toBe(customer);
    expect((await t.post(portalUrl(w.ws), {}, w.owner)).statusCode).toBe(403);
  });

  it('answers 409 no_billing_account when the contact has no customer account record', async () => {
    const w = await world();
    const res = await t.post(portalUrl(w.ws), {}, w.owner);
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('no_billing_account');
  });

  it('stays open on an archived workspace (stopping payment must stay possible)', async () => {
    const w = await world();
    await withCustomer(w.owner);
    await t.patch(`/api/workspaces/${w.ws.id}/`, { status: 'archived' }, w.owner);
    expect((await t.post(portalUrl(w.ws), {}, w.owner)).statusCode).toBe(200);
  });

  it('answers 502 when the provider fails', async () => {
    const w = await world();
    await withCustomer(w.owner);
    fake.failNext('/v1/billing_portal/sessions', 400);
    const res = await t.post(portalUrl(w.ws), {}, w.owner);
    expect(res.statusCode).toBe(502);
    expect(res.json().code).toBe('payment_provider_error');
  });
});

describe('without STRIPE_SECRET_KEY', () => {
  it('answers 503 billing_not_configured to the owner, after the membership and role checks', async () => {
    const bare = await createTestApp();
    try {
      const owner = await newUser(bare);
      const member = await newUser(bare);
      const ws = await newWorkspace(bare, owner);
      await addMember(bare, ws, member);
      const checkout = await bare.post(checkoutUrl(ws), { plan: 'pro', interval: 'month' }, owner);
      expect(checkout.statusCode).toBe(503);
      expect(checkout.json().code).toBe('billing_not_configured');
      expect((await bare.post(portalUrl(ws), {}, owner)).json().code).toBe('billing_not_configured');
      expect((await bare.post(checkoutUrl(ws), { plan: 'pro', interval: 'month' }, member)).statusCode).toBe(403);
    } finally {
      await bare.close();
    }
  });
});

describe('STRIPE_API_BASE', () => {
  it.each([
    ['http://127.0.0.1:12111', { host: '127.0.0.1', port: 12111, protocol: 'http' }],
    ['http://127.0.0.1:12111/v1', { host: '127.0.0.1', port: 12111, protocol: 'http' }],
    ['https://api.example.com/v1/', { host: 'api.example.com', port: 443, protocol: 'https' }],
  ])('parses %s', (base, expected) => expect(parseApiBase(base)).toEqual(expected));

  it('refuses another path or protocol', () => {
    expect(() => parseApiBase('http://127.0.0.1/api')).toThrow(/STRIPE_API_BASE/);
    expect(() => parseApiBase('ftp://127.0.0.1/')).toThrow(/STRIPE_API_BASE/);
  });
});
