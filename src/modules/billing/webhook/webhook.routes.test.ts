import { asc, eq, sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  createLoggedTestApp,
  deliver,
  nowSeconds,
  priceObject,
  productObject,
  providerEvent,
  signPayload,
  subscriptionObject,
  TEST_WEBHOOK_SECRET,
  workspaceWithCatalog,
  useLoggedTestApp,
  WEBHOOK_URL,
} from '../../../../test/support/webhook.js';
import { newWorkspace, type TestUser, type TestWorkspace } from '../../../../test/support/factories.js';
import {
  features,
  prices,
  productFeatures,
  products,
  subscriptionItems,
  subscriptions,
  webhookEvents,
} from '../billing.table.js';

const t = useLoggedTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
const db = () => t.deps.database.db;

const inbox = () => db().select().from(webhookEvents).orderBy(asc(webhookEvents.receivedAt));
const subscriptionRow = async (id: string) =>
  (await db().select().from(subscriptions).where(eq(subscriptions.providerSubscriptionId, id)))[0];
const itemsOf = async (subscriptionId: string) =>
  (await db().select().from(subscriptionItems).where(eq(subscriptionItems.subscriptionId, subscriptionId)))
    .map((i) => `${i.providerItemId}:${i.providerPriceId}:${i.providerProductId}:${i.quantity}`)
    .sort();
const productRow = async (id: string) => (await db().select().from(products).where(eq(products.providerProductId, id)))[0];
const priceRow = async (id: string) => (await db().select().from(prices).where(eq(prices.providerPriceId, id)))[0];
const featuresOf = async (productId: string) =>
  (
    await db()
      .select({ key: features.key })
      .from(productFeatures)
      .innerJoin(products, eq(products.id, productFeatures.productId))
      .innerJoin(features, eq(features.id, productFeatures.featureId))
      .where(eq(products.providerProductId, productId))
  )
    .map((r) => r.key)
    .sort();

interface Setup {
  owner: TestUser;
  ws: TestWorkspace;
  customer: string;
}

/** A workspace whose owner has a customer account record, and a mirrored Pro and Team catalog. */
const setup = (): Promise<Setup> => workspaceWithCatalog(t);

const proItems = [{ price: 'price_pro', product: 'prod_pro' }];
/** A `customer.subscription.<kind>` event. */
const subEvent = (kind: 'created' | 'updated' | 'deleted', options: Parameters<typeof subscriptionObject>[0], event: { created?: number } = {}) =>
  providerEvent(`customer.subscription.${kind}`, subscriptionObject(options), event);
const teamItems = [{ price: 'price_team', product: 'prod_team' }];

async function planKey(s: Setup): Promise<string> {
  const res = await t.get(`/api/workspaces/${s.ws.id}/plan/`, s.owner);
  expect(res.statusCode).toBe(200);
  return res.json().plan.key as string;
}

describe('signature', () => {
  const body = () => JSON.stringify(providerEvent('product.created', productObject()));

  it('accepts a correctly signed event and records it', async () => {
    const res = await deliver(t, body());
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ received: true, outcome: 'applied', duplicate: false });
    expect(await inbox()).toHaveLength(1);
  });

  it.each([
    ['no header', () => null],
    ['an empty header', () => ''],
    ['a bad HMAC', () => `t=${nowSeconds()},v1=${'0'.repeat(64)}`],
    ['no v1 value', () => `t=${nowSeconds()}`],
    ['no timestamp', () => `v1=${'0'.repeat(64)}`],
    ['garbage', () => 'not a signature'],
  ])('refuses %s with 400 invalid_signature and records nothing', async (_label, header) => {
    const res = await deliver(t, body(), { header: header() });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'invalid_signature' });
    expect(await inbox()).toEqual([]);
  });

  it('refuses a signature made with another secret', async () => {
    const res = await deliver(t, body(), { secret: 'whsec_someone_else' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_signature');
  });

  it('refuses a body altered after signing', async () => {
    const original = body();
    const header = signPayload(original);
    const res = await deliver(t, original.replace('"Pro"', '"Pwned"'), { header });
    expect(res.statusCode).toBe(400);
    // Re-serialising the same JSON differently also breaks the signature: the raw bytes count.
    const spaced = JSON.stringify(JSON.parse(original), null, 2);
    expect((await deliver(t, spaced, { header })).statusCode).toBe(400);
    expect(await db().select().from(products)).toEqual([]);
  });

  it('accepts timestamps within 5 minutes either way and refuses older or future ones', async () => {
    expect((await deliver(t, body(), { timestamp: nowSeconds() - 290 })).statusCode).toBe(200);
    expect((await deliver(t, body(), { timestamp: nowSeconds() + 290 })).statusCode).toBe(200);
    const old = await deliver(t, body(), { timestamp: nowSeconds() - 301 });
    expect(old.statusCode).toBe(400);
    expect(old.json().code).toBe('invalid_signature');
    const future = await deliver(t, body(), { timestamp: nowSeconds() + 310 });
    expect(future.statusCode).toBe(400);
    expect(future.json().code).toBe('invalid_signature');
    expect(await inbox()).toHaveLength(2);
  });

  it('accepts a header with several v1 values when one of them is right (secret rotation)', async () => {
    const text = body();
    const timestamp = nowSeconds();
    const right = signPayload(text, { timestamp }).split('v1=')[1];
    const wrong = signPayload(text, { timestamp, secret: 'whsec_old' }).split('v1=')[1];
    const res = await deliver(t, text, { header: `t=${timestamp},v1=${wrong},v1=${right},v0=abc` });
    expect(res.statusCode).toBe(200);
    expect((await deliver(t, body(), { header: `t=${timestamp},v1=${wrong},v1=${'f'.repeat(64)}` })).statusCode).toBe(400);
  });

  it('accepts application/json with a charset and refuses other media types with 415', async () => {
    expect((await deliver(t, body(), { contentType: 'application/json; charset=utf-8' })).statusCode).toBe(200);
    expect((await deliver(t, body(), { contentType: 'application/x-www-form-urlencoded' })).statusCode).toBe(415);
  });

  it('is exactly /api/subscriptions/webhook, without a trailing slash', async () => {
    const res = await t.app.inject({ method: 'POST', url: `${WEBHOOK_URL}/`, payload: {} });
    expect(res.statusCode).toBe(404);
  });
});

describe('without PAYMENT_WEBHOOK_SECRET', () => {
  it('refuses every delivery with 503 webhook_not_configured and logs an error', async () => {
    const bare = await createLoggedTestApp();
    try {
      const res = await deliver(bare, providerEvent('product.created', productObject()));
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('webhook_not_configured');
      expect(bare.logs.lines().some((l) => l.level === 50 && /PAYMENT_WEBHOOK_SECRET/.test(String(l.msg)))).toBe(true);
    } finally {
      await bare.close();
    }
  });
});

describe('payload validation', () => {
  it('refuses a signed body that is not JSON with 400 invalid_payload', async () => {
    const res = await deliver(t, '{"id": "evt_1", ');
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_payload');
    expect(await inbox()).toEqual([]);
  });

  it.each([
    ['no id', { type: 'product.created', created: 1, data: { object: {} } }],
    ['no type', { id: 'evt_1', created: 1, data: { object: {} } }],
    ['no created', { id: 'evt_1', type: 'product.created', data: { object: {} } }],
    ['no data.object', { id: 'evt_1', type: 'product.created', created: 1, data: {} }],
    ['an array', [{ id: 'evt_1' }]],
    ['a subscription without customer', providerEvent('customer.subscription.updated', { ...subscriptionObject(), customer: undefined })],
    ['a subscription without items', providerEvent('customer.subscription.created', { ...subscriptionObject(), items: undefined })],
    ['a subscription with a text period', subEvent('created', { extra: { current_period_end: 'soon' } })],
    ['a product without id', providerEvent('product.created', { name: 'X', active: true })],
    ['a price with a bad interval', providerEvent('price.created', priceObject({ recurring: { interval: 'fortnight', interval_count: 1 } }))],
    ['a price without product', providerEvent('price.updated', { ...priceObject(), product: undefined })],
  ])('refuses %s with 400 invalid_payload and records nothing', async (_label, event) => {
    const res = await deliver(t, event);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_payload', errors: expect.any(Object) });
    expect(await inbox()).toEqual([]);
  });

  it('tolerates unknown fields and expanded references', async () => {
    const event = providerEvent('price.created', {
      ...priceObject({ id: 'price_x', product: { id: 'prod_expanded', object: 'product', name: 'Expanded' } }),
      tiers_mode: null,
      something_new: { nested: [1, 2, 3] },
    });
    const res = await deliver(t, { ...event, request: { id: null, idempotency_key: null }, pending_webhooks: 1 });
    expect(res.statusCode).toBe(200);
    expect((await priceRow('price_x'))?.providerProductId).toBe('prod_expanded');
  });

  it('answers 200 to an unhandled type and records it as unhandled, once', async () => {
    const event = providerEvent('invoice.paid', { id: 'in_1', object: 'invoice', anything: true });
    const res = await deliver(t, event);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ received: true, outcome: 'unhandled', duplicate: false });
    const again = await deliver(t, event);
    expect(again.json()).toEqual({ received: true, outcome: 'unhandled', duplicate: true });
    expect(await inbox()).toMatchObject([{ id: event.id, type: 'invoice.paid', outcome: 'unhandled', attempts: 1 }]);
  });
});

describe('products and features', () => {
  it('copies metadata.plan and syncs space-delimited metadata.features', async () => {
    const created = nowSeconds() - 100;
    const product = productObject({ id: 'prod_1', name: 'Pro', metadata: { plan: 'pro', features: '  chat  kb\tapi chat ' } });
    expect((await deliver(t, providerEvent('product.created', product, { created }))).json().outcome).toBe('applied');
    expect(await productRow('prod_1')).toMatchObject({ name: 'Pro', plan: 'pro', active: true });
    expect(await featuresOf('prod_1')).toEqual(['api', 'chat', 'kb']);

    const updated = productObject({ id: 'prod_1', name: 'Pro 2', metadata: { plan: 'team', features: 'kb sso' } });
    await deliver(t, providerEvent('product.updated', updated, { created: created + 1 }));
    expect(await productRow('prod_1')).toMatchObject({ name: 'Pro 2', plan: 'team' });
    expect(await featuresOf('prod_1')).toEqual(['kb', 'sso']);
    // Feature records are shared and kept; only the product's mapping changes.
    expect((await db().select().from(features)).map((f) => f.key).sort()).toEqual(['api', 'chat', 'kb', 'sso']);

    await deliver(t, providerEvent('product.updated', productObject({ id: 'prod_1', metadata: {} }), { created: created + 2 }));
    expect(await productRow('prod_1')).toMatchObject({ plan: null });
    expect(await featuresOf('prod_1')).toEqual([]);
  });

  it.each([['enterprise'], ['free'], ['']])('stores metadata.plan %j as no plan (free)', async (plan) => {
    await deliver(t, providerEvent('product.created', productObject({ id: 'prod_odd', metadata: { plan } })));
    expect((await productRow('prod_odd'))?.plan).toBeNull();
  });

  it('marks a deleted product inactive, and creates an unknown one as inactive', async () => {
    const created = nowSeconds() - 10;
    await deliver(t, providerEvent('product.created', productObject({ id: 'prod_1' }), { created }));
    await deliver(t, providerEvent('product.deleted', productObject({ id: 'prod_1', active: true }), { created: created + 1 }));
    expect((await productRow('prod_1'))?.active).toBe(false);

    await deliver(t, providerEvent('product.deleted', productObject({ id: 'prod_unknown', metadata: { plan: 'team' } })));
    expect(await productRow('prod_unknown')).toMatchObject({ active: false, plan: 'team' });
  });
});

describe('prices', () => {
  it.each([
    [{ interval: 'month', interval_count: 1 }, 'month_1'],
    [{ interval: 'year', interval_count: 1 }, 'year_1'],
    [{ interval: 'month', interval_count: 3 }, 'month_3'],
    [{ interval: 'week', interval_count: 2 }, 'week_2'],
    [null, null],
  ])('builds freq from recurring %j as %s', async (recurring, freq) => {
    await deliver(t, providerEvent('price.created', priceObject({ id: 'price_1', product: 'prod_1', recurring, unit_amount: 999, currency: 'EUR' })));
    expect(await priceRow('price_1')).toMatchObject({
      freq,
      interval: recurring?.interval ?? null,
      intervalCount: recurring?.interval_count ?? null,
      unitAmount: 999,
      currency: 'eur',
      providerProductId: 'prod_1',
      active: true,
    });
  });

  it('updates price fields and marks a deleted price inactive (an unknown one is created inactive)', async () => {
    const created = nowSeconds() - 10;
    await deliver(t, providerEvent('price.created', priceObject({ id: 'price_1', product: 'prod_1' }), { created }));
    await deliver(t, providerEvent('price.updated', priceObject({ id: 'price_1', product: 'prod_1', active: false, unit_amount: 1500 }), { created: created + 1 }));
    expect(await priceRow('price_1')).toMatchObject({ active: false, unitAmount: 1500 });
    await deliver(t, providerEvent('price.deleted', priceObject({ id: 'price_1', product: 'prod_1', active: true }), { created: created + 2 }));
    expect((await priceRow('price_1'))?.active).toBe(false);
    await deliver(t, providerEvent('price.deleted', priceObject({ id: 'price_gone', product: 'prod_1' })));
    expect(await priceRow('price_gone')).toMatchObject({ active: false, freq: 'month_1' });
  });

  it('ignores an event older than the last one applied to the same price (stale)', async () => {
    const created = nowSeconds() - 10;
    await deliver(t, providerEvent('price.updated', priceObject({ id: 'price_1', unit_amount: 3000 }), { created: created + 5 }));
    const res = await deliver(t, providerEvent('price.created', priceObject({ id: 'price_1', unit_amount: 1000 }), { created }));
    expect(res.json()).toEqual({ received: true, outcome: 'stale', duplicate: false });
    expect((await priceRow('price_1'))?.unitAmount).toBe(3000);
    expect((await inbox()).map((e) => e.outcome)).toEqual(['applied', 'stale']);
  });
});

describe('subscriptions', () => {
  it('skips a subscription of a customer with no account here and logs a warning', async () => {
    const s = await setup();
    const sub = subscriptionObject({ customer: 'cus_nobody', workspaceId: s.ws.id, items: proItems });
    const res = await deliver(t, providerEvent('customer.subscription.created', sub));
    expect(res.statusCode).toBe(200);
    expect(res.json().outcome).toBe('skipped');
    expect(await db().select().from(subscriptions)).toEqual([]);
    expect(t.warnings().some((w) => w.customer === 'cus_nobody' && /no account/.test(String(w.msg)))).toBe(true);
    expect(await planKey(s)).toBe('free');
  });

  it('records every field and the items, attaches to metadata.workspace_id and grants the plan', async () => {
    const s = await setup();
    const start = nowSeconds() - 86400;
    const sub = subscriptionObject({
      id: 'sub_1',
      customer: s.customer,
      status: 'trialing',
      workspaceId: s.ws.id,
      items: [...proItems, { price: 'price_addon', product: 'prod_addon', quantity: 3, id: 'si_addon' }],
      periodStart: start,
      periodEnd: start + 30 * 86400,
      extra: { trial_start: start, trial_end: start + 14 * 86400, cancel_at: start + 60 * 86400, cancel_at_period_end: true },
    });
    const res = await deliver(t, providerEvent('customer.subscription.created', sub));
    expect(res.json().outcome).toBe('applied');
    const row = await subscriptionRow('sub_1');
    expect(row).toMatchObject({
      providerCustomerId: s.customer,
      workspaceId: s.ws.id,
      status: 'trialing',
      currentPeriodStart: new Date(start * 1000),
      currentPeriodEnd: new Date((start + 30 * 86400) * 1000),
      billingCycleAnchor: new Date(start * 1000),
      trialStart: new Date(start * 1000),
      trialEnd: new Date((start + 14 * 86400) * 1000),
      cancelAt: new Date((start + 60 * 86400) * 1000),
      cancelAtPeriodEnd: true,
      canceledAt: null,
      endedAt: null,
      metadata: { workspace_id: s.ws.id },
    });
    expect(await itemsOf(row!.id)).toEqual(['si_0_sub_1:price_pro:prod_pro:1', 'si_addon:price_addon:prod_addon:3']);
    const plan = (await t.get(`/api/workspaces/${s.ws.id}/plan/`, s.owner)).json();
    expect(plan.plan.key).toBe('pro');
    expect(plan.subscription).toMatchObject({ status: 'trialing', cancel_at_period_end: true });
    expect(plan.billing_contact.id).toBe(s.owner.id);
  });

  it('reads the billing period from the items when the subscription has none (newer API versions)', async () => {
    const s = await setup();
    const start = nowSeconds() - 1000;
    const sub = subscriptionObject({ id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems, periodStart: start, periodOnItems: true });
    expect(sub.current_period_start).toBeUndefined();
    await deliver(t, providerEvent('customer.subscription.created', sub));
    expect(await subscriptionRow('sub_1')).toMatchObject({
      currentPeriodStart: new Date(start * 1000),
      currentPeriodEnd: new Date((start + 30 * 86400) * 1000),
    });
  });

  it('updates fields and recreates the items on every applied event', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id };
    await deliver(t, subEvent('created', { ...base, items: proItems }, { created }));
    expect(await planKey(s)).toBe('pro');
    await deliver(
      t,
      subEvent('updated', { ...base, status: 'past_due', items: [{ ...teamItems[0]!, id: 'si_new' }] }, { created: created + 1 }),
    );
    const row = await subscriptionRow('sub_1');
    expect(row?.status).toBe('past_due');
    expect(await itemsOf(row!.id)).toEqual(['si_new:price_team:prod_team:1']);
    expect(await planKey(s)).toBe('team');
    expect(await db().select().from(subscriptionItems)).toHaveLength(1);
  });

  it('ignores an event older than the last one applied to the subscription (stale)', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id };
    await deliver(t, subEvent('updated', { ...base, items: teamItems }, { created: created + 5 }));
    const res = await deliver(t, subEvent('created', { ...base, status: 'trialing', items: proItems }, { created }));
    expect(res.json().outcome).toBe('stale');
    expect((await subscriptionRow('sub_1'))?.status).toBe('active');
    expect(await planKey(s)).toBe('team');
  });

  it('deleted cancels the subscription; a later-arriving created or updated event is ignored as late', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems };
    await deliver(t, subEvent('created', base, { created }));
    const deleted = await deliver(
      t,
      subEvent('deleted', { ...base, status: 'canceled', extra: { canceled_at: created + 9 } }, { created: created + 10 }),
    );
    expect(deleted.json().outcome).toBe('applied');
    expect(await subscriptionRow('sub_1')).toMatchObject({
      status: 'canceled',
      canceledAt: new Date((created + 9) * 1000),
      endedAt: new Date((created + 10) * 1000),
    });
    expect(await planKey(s)).toBe('free');

    // Even one with a newer `created`: an ended subscription never comes back.
    for (const at of [created + 5, created + 20]) {
      const late = await deliver(t, subEvent('updated', { ...base, status: 'active' }, { created: at }));
      expect(late.json().outcome).toBe('ignored');
    }
    expect((await subscriptionRow('sub_1'))?.status).toBe('canceled');
    expect(await planKey(s)).toBe('free');
  });

  it('deleted ends the subscription even when its object still says active', async () => {
    const s = await setup();
    await deliver(t, subEvent('deleted', { id: 'sub_1', customer: s.customer, status: 'active', items: proItems }));
    expect((await subscriptionRow('sub_1'))?.status).toBe('canceled');
  });

  it('an ending event applies even after a newer live event was applied (shuffled delivery)', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems };
    await deliver(t, subEvent('updated', { ...base, status: 'active' }, { created: created + 20 }));
    const res = await deliver(t, subEvent('deleted', { ...base, status: 'canceled' }, { created: created + 10 }));
    expect(res.json().outcome).toBe('applied');
    expect((await subscriptionRow('sub_1'))?.status).toBe('canceled');
    expect(await planKey(s)).toBe('free');
  });

  it('records a subscription without metadata.workspace_id, or naming an unknown workspace, on no workspace', async () => {
    const s = await setup();
    await deliver(t, subEvent('created', { id: 'sub_none', customer: s.customer, items: proItems }));
    await deliver(t, subEvent('created', { id: 'sub_unknown', customer: s.customer, workspaceId: '00000000-0000-4000-8000-000000000000', items: proItems }));
    await deliver(t, subEvent('created', { id: 'sub_junk', customer: s.customer, workspaceId: 'not-a-uuid', items: proItems }));
    for (const id of ['sub_none', 'sub_unknown', 'sub_junk']) expect((await subscriptionRow(id))?.workspaceId).toBeNull();
    expect(await planKey(s)).toBe('free');
  });

  it('does not attach a second access-granting subscription: recorded, warning logged; it takes over once the first ends', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const first = { id: 'sub_first', customer: s.customer, workspaceId: s.ws.id, items: proItems };
    const second = { id: 'sub_second', customer: s.customer, workspaceId: s.ws.id, items: teamItems };
    await deliver(t, subEvent('created', first, { created }));
    const res = await deliver(t, subEvent('created', second, { created: created + 1 }));
    expect(res.json().outcome).toBe('applied');
    expect((await subscriptionRow('sub_second'))?.workspaceId).toBeNull();
    expect((await subscriptionRow('sub_first'))?.workspaceId).toBe(s.ws.id);
    expect(t.warnings().some((w) => w.subscription === 'sub_second' && w.holder === 'sub_first')).toBe(true);
    expect(await planKey(s)).toBe('pro');

    // The first one ends: the waiting one (still access-granting) gets the workspace.
    await deliver(t, subEvent('deleted', { ...first, status: 'canceled' }, { created: created + 2 }));
    expect((await subscriptionRow('sub_second'))?.workspaceId).toBe(s.ws.id);
    expect((await subscriptionRow('sub_first'))?.workspaceId).toBe(s.ws.id);
    expect(await planKey(s)).toBe('team');
  });

  it('attaches a non-granting subscription (incomplete) and lets it grant once it becomes active', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems };
    await deliver(t, subEvent('created', { ...base, status: 'incomplete' }, { created }));
    expect((await subscriptionRow('sub_1'))?.workspaceId).toBe(s.ws.id);
    expect(await planKey(s)).toBe('free');
    await deliver(t, subEvent('updated', base, { created: created + 1 }));
    expect(await planKey(s)).toBe('pro');
  });

  it('keeps an attached subscription on its workspace, whatever later metadata says', async () => {
    const s = await setup();
    const other = await newWorkspace(t, s.owner, 'Other');
    const created = nowSeconds() - 100;
    await deliver(t, subEvent('created', { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems }, { created }));
    await deliver(t, subEvent('updated', { id: 'sub_1', customer: s.customer, workspaceId: other.id, items: proItems }, { created: created + 1 }));
    await deliver(t, subEvent('updated', { id: 'sub_1', customer: s.customer, items: proItems }, { created: created + 2 }));
    expect((await subscriptionRow('sub_1'))?.workspaceId).toBe(s.ws.id);
  });

  it('takes a subscription that becomes access-granting off a workspace another one holds', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const a = { id: 'sub_a', customer: s.customer, workspaceId: s.ws.id, items: proItems };
    const b = { id: 'sub_b', customer: s.customer, workspaceId: s.ws.id, items: teamItems };
    await deliver(t, subEvent('created', { ...a, status: 'unpaid' }, { created }));
    await deliver(t, subEvent('created', b, { created: created + 1 }));
    expect((await subscriptionRow('sub_a'))?.workspaceId).toBe(s.ws.id);
    expect((await subscriptionRow('sub_b'))?.workspaceId).toBe(s.ws.id);
    // A becomes active again: the workspace keeps B, A is recorded on no workspace.
    const res = await deliver(t, subEvent('updated', a, { created: created + 2 }));
    expect(res.statusCode).toBe(200);
    expect((await subscriptionRow('sub_a'))?.workspaceId).toBeNull();
    expect(await planKey(s)).toBe('team');
  });
});

describe('inbox, duplicates and failures', () => {
  it('applies a duplicate delivery once and acknowledges the copy', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems };
    const first = subEvent('created', base, { created });
    await deliver(t, first);
    await deliver(t, subEvent('updated', { ...base, status: 'past_due' }, { created: created + 1 }));
    // Redelivered with a fresh signature: acknowledged, not applied again (it would be stale anyway,
    // but the inbox answers before looking).
    const again = await deliver(t, first);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ received: true, outcome: 'applied', duplicate: true });
    expect((await subscriptionRow('sub_1'))?.status).toBe('past_due');
    const row = (await inbox()).find((e) => e.id === first.id);
    expect(row).toMatchObject({ type: 'customer.subscription.created', outcome: 'applied', attempts: 1, error: null, createdAt: new Date(created * 1000) });
  });

  it('records every outcome in the inbox', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems };
    await deliver(t, subEvent('created', { ...base, customer: 'cus_nobody' }, { created }));
    await deliver(t, subEvent('updated', base, { created: created + 2 }));
    await deliver(t, subEvent('created', base, { created: created + 1 }));
    await deliver(t, subEvent('deleted', { ...base, status: 'canceled' }, { created: created + 3 }));
    await deliver(t, subEvent('updated', base, { created: created + 4 }));
    await deliver(t, providerEvent('charge.succeeded', { id: 'ch_1' }));
    const outcomes = (await inbox()).filter((e) => e.type !== 'product.created' && e.type !== 'price.created').map((e) => e.outcome);
    expect(outcomes).toEqual(['skipped', 'applied', 'stale', 'applied', 'ignored', 'unhandled']);
  });

  it('answers 500 when processing fails, records the failure, and applies the redelivery', async () => {
    const database = db();
    await database.execute(sql.raw(`CREATE OR REPLACE FUNCTION wsai_test_fail() RETURNS trigger AS $$
      BEGIN RAISE EXCEPTION 'injected failure for %', NEW.provider_price_id; END $$ LANGUAGE plpgsql`));
    await database.execute(sql.raw(`CREATE TRIGGER wsai_test_fail BEFORE INSERT OR UPDATE ON prices FOR EACH ROW
      WHEN (NEW.provider_price_id = 'price_boom') EXECUTE FUNCTION wsai_test_fail()`));
    const event = providerEvent('price.created', priceObject({ id: 'price_boom', product: 'prod_1' }));
    try {
      const res = await deliver(t, event);
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ detail: expect.any(String), code: 'webhook_processing_failed' });
      expect(res.body).not.toContain('injected');
      expect(await priceRow('price_boom')).toBeUndefined();
      expect(await inbox()).toMatchObject([{ id: event.id, outcome: 'failed', attempts: 1, error: expect.stringContaining('injected failure for price_boom') }]);
      expect(t.logs.lines().some((l) => l.level === 50 && l.event === event.id)).toBe(true);

      expect((await deliver(t, event)).statusCode).toBe(500);
      expect(await inbox()).toMatchObject([{ outcome: 'failed', attempts: 2 }]);
    } finally {
      await database.execute(sql.raw('DROP TRIGGER IF EXISTS wsai_test_fail ON prices'));
      await database.execute(sql.raw('DROP FUNCTION IF EXISTS wsai_test_fail()'));
    }
    const retried = await deliver(t, event);
    expect(retried.statusCode).toBe(200);
    expect(retried.json()).toEqual({ received: true, outcome: 'applied', duplicate: false });
    expect(await priceRow('price_boom')).toMatchObject({ active: true, freq: 'month_1' });
    expect(await inbox()).toMatchObject([{ outcome: 'applied', attempts: 3, error: null }]);
    // And a further copy is a duplicate.
    expect((await deliver(t, event)).json().duplicate).toBe(true);
  });

  it('applies duplicates racing on two processes exactly once', async () => {
    const s = await setup();
    const second = await createLoggedTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
    try {
      for (let round = 0; round < 3; round++) {
        const event = providerEvent(
          'customer.subscription.updated',
          subscriptionObject({ id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems, status: round % 2 ? 'past_due' : 'active' }),
          { created: nowSeconds() - 100 + round },
        );
        const responses = await Promise.all([deliver(t, event), deliver(second, event), deliver(t, event), deliver(second, event)]);
        expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
        expect(responses.filter((r) => !r.json().duplicate)).toHaveLength(1);
        expect(responses.map((r) => r.json().outcome)).toEqual(['applied', 'applied', 'applied', 'applied']);
        expect((await inbox()).find((e) => e.id === event.id)).toMatchObject({ outcome: 'applied', attempts: 1 });
      }
      expect(await db().select().from(subscriptions)).toHaveLength(1);
      expect(await db().select().from(subscriptionItems)).toHaveLength(1);
      expect(await planKey(s)).toBe('pro');
    } finally {
      await second.close();
    }
  });

  it('attaches exactly one of two different subscriptions for one workspace processed at once', async () => {
    const s = await setup();
    const second = await createLoggedTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
    try {
      const created = nowSeconds() - 100;
      const a = subEvent('created', { id: 'sub_a', customer: s.customer, workspaceId: s.ws.id, items: proItems }, { created });
      const b = subEvent('created', { id: 'sub_b', customer: s.customer, workspaceId: s.ws.id, items: teamItems }, { created });
      const responses = await Promise.all([deliver(t, a), deliver(second, b)]);
      expect(responses.map((r) => r.statusCode)).toEqual([200, 200]);
      const attached = (await db().select().from(subscriptions)).filter((r) => r.workspaceId === s.ws.id);
      expect(attached).toHaveLength(1);
      expect(['pro', 'team']).toContain(await planKey(s));
    } finally {
      await second.close();
    }
  });

  // Needs a second connection holding a transaction open, which PGlite (one connection) cannot do.
  it.skipIf(!process.env.TEST_DATABASE_URL)(
    'records a subscription on no workspace when the one-granting index refuses it (PostgreSQL)',
    async () => {
      const s = await setup();
      const other = new pg.Client({ connectionString: t.database.url });
      await other.connect();
      try {
        // Another process is attaching a different access-granting subscription and has not committed.
        await other.query('BEGIN');
        await other.query(
          `INSERT INTO subscriptions (provider_subscription_id, provider_customer_id, workspace_id, status, last_event_at)
           VALUES ('sub_other', $1, $2, 'active', now())`,
          [s.customer, s.ws.id],
        );
        const pending = deliver(t, subEvent('created', { id: 'sub_1', customer: s.customer, workspaceId: s.ws.id, items: proItems }));
        // The delivery saw no other subscription and now waits on the index for that transaction.
        await new Promise((resolve) => setTimeout(resolve, 300));
        await other.query('COMMIT');
        const res = await pending;
        expect(res.statusCode).toBe(200);
        expect(res.json().outcome).toBe('applied');
        expect(await subscriptionRow('sub_1')).toMatchObject({ workspaceId: null, status: 'active' });
        expect(await itemsOf((await subscriptionRow('sub_1'))!.id)).toHaveLength(1);
        expect(t.warnings().some((w) => w.subscription === 'sub_1' && /concurrent/.test(String(w.msg)))).toBe(true);
      } finally {
        await other.end();
      }
    },
  );
});
