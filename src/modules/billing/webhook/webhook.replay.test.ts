import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, useTestApp } from '../../../../test/support/app.js';
import { newUser, newWorkspace } from '../../../../test/support/factories.js';
import {
  deliver,
  nowSeconds,
  priceObject,
  productObject,
  providerEvent,
  subscriptionObject,
  TEST_WEBHOOK_SECRET,
} from '../../../../test/support/webhook.js';
import { billingCustomers, subscriptionItems, subscriptions, webhookEvents } from '../billing.table.js';

const t = useTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
const db = () => t.deps.database.db;
const webhooks = () => t.deps.services.webhooks;

const eventRow = async (id: string) => (await db().select().from(webhookEvents).where(eq(webhookEvents.id, id)))[0];
const subscriptionRow = async (id: string) =>
  (await db().select().from(subscriptions).where(eq(subscriptions.providerSubscriptionId, id)))[0];

/** A workspace on Pro through a real `customer.subscription.created` delivery. */
async function subscribed() {
  const owner = await newUser(t);
  const ws = await newWorkspace(t, owner);
  const customer = `cus_${owner.id}`;
  await db().insert(billingCustomers).values({ providerCustomerId: customer, userId: owner.id });
  const created = nowSeconds() - 3600;
  await deliver(t, providerEvent('product.created', productObject({ id: 'prod_pro', metadata: { plan: 'pro' } }), { created }));
  await deliver(t, providerEvent('price.created', priceObject({ id: 'price_pro', product: 'prod_pro' }), { created }));
  const subId = `sub_${owner.id}`;
  const event = providerEvent(
    'customer.subscription.created',
    subscriptionObject({ id: subId, customer, workspaceId: ws.id, items: [{ price: 'price_pro', product: 'prod_pro' }] }),
    { created: nowSeconds() - 60 },
  );
  const body = JSON.stringify(event);
  expect((await deliver(t, body)).json()).toMatchObject({ outcome: 'applied' });
  const planOf = async () => (await t.get(`/api/workspaces/${ws.id}/plan/`, owner)).json().plan.key as string;
  return { owner, ws, customer, subId, event, body, planOf };
}

describe('stored payloads', () => {
  it('keeps the raw body of each event exactly as received, handled or not', async () => {
    const { event, body } = await subscribed();
    expect((await eventRow(event.id))!.payload).toBe(body);
    const other = JSON.stringify(providerEvent('invoice.paid', { id: 'in_1', object: 'invoice' }));
    expect((await deliver(t, other)).json().outcome).toBe('unhandled');
    expect((await eventRow(JSON.parse(other).id))!.payload).toBe(other);
    const listed = await webhooks().listEvents({ type: 'invoice.paid' });
    expect(listed).toEqual([expect.objectContaining({ type: 'invoice.paid', outcome: 'unhandled', hasPayload: true, error: null })]);
  });

  it('housekeeping clears payloads older than WEBHOOK_PAYLOAD_RETENTION_DAYS (30 by default)', async () => {
    const { event } = await subscribed();
    const old = JSON.stringify(providerEvent('invoice.paid', { id: 'in_old', object: 'invoice' }));
    await deliver(t, old);
    const oldId = JSON.parse(old).id as string;
    await db().update(webhookEvents).set({ receivedAt: sql`now() - interval '31 days'` }).where(eq(webhookEvents.id, oldId));
    expect(await webhooks().prunePayloads()).toBe(1);
    expect((await eventRow(oldId))!.payload).toBeNull();
    expect((await eventRow(oldId))!.outcome).toBe('unhandled');
    expect((await eventRow(event.id))!.payload).not.toBeNull();
    await expect(webhooks().replay(oldId)).rejects.toMatchObject({ status: 409, code: 'webhook_payload_not_kept' });
  });
});

describe('replay', () => {
  it('re-creates a subscription deleted by hand, and a second replay changes nothing more', async () => {
    const { subId, event, planOf } = await subscribed();
    expect(await planOf()).toBe('pro');
    await db().delete(subscriptions).where(eq(subscriptions.providerSubscriptionId, subId));
    expect(await planOf()).toBe('free');

    expect(await webhooks().replay(event.id)).toEqual({ id: event.id, type: event.type, outcome: 'applied', previous: 'applied' });
    expect(await planOf()).toBe('pro');
    const restored = await subscriptionRow(subId);
    expect(restored).toMatchObject({ status: 'active' });

    await webhooks().replay(event.id);
    expect(await db().select().from(subscriptions).where(eq(subscriptions.providerSubscriptionId, subId))).toHaveLength(1);
    expect(await db().select().from(subscriptionItems).where(eq(subscriptionItems.subscriptionId, restored!.id))).toHaveLength(1);
    expect((await eventRow(event.id))!.attempts).toBe(1);
  });

  it('re-syncs fields and items changed by hand from the stored payload', async () => {
    const { subId, event, planOf } = await subscribed();
    const row = (await subscriptionRow(subId))!;
    await db().update(subscriptions).set({ status: 'unpaid', cancelAtPeriodEnd: true }).where(eq(subscriptions.id, row.id));
    await db().delete(subscriptionItems).where(eq(subscriptionItems.subscriptionId, row.id));
    expect(await planOf()).toBe('free');
    expect((await webhooks().replay(event.id)).outcome).toBe('applied');
    expect(await subscriptionRow(subId)).toMatchObject({ status: 'active', cancelAtPeriodEnd: false });
    expect(await planOf()).toBe('pro');
  });

  it('never rolls a subscription back past a newer event: the replay of an older one is stale', async () => {
    const { subId, customer, ws, event, planOf } = await subscribed();
    const cancel = providerEvent(
      'customer.subscription.updated',
      subscriptionObject({ id: subId, customer, workspaceId: ws.id, status: 'past_due', items: [{ price: 'price_pro', product: 'prod_pro' }] }),
    );
    await deliver(t, cancel);
    expect((await webhooks().replay(event.id)).outcome).toBe('stale');
    expect((await subscriptionRow(subId))!.status).toBe('past_due');
    expect(await planOf()).toBe('pro');
  });

  it('refuses an unknown event and reports an unhandled type as such', async () => {
    await expect(webhooks().replay('evt_missing')).rejects.toMatchObject({ status: 404, code: 'webhook_event_not_found' });
    const other = JSON.stringify(providerEvent('invoice.paid', { id: 'in_2', object: 'invoice' }));
    await deliver(t, other);
    expect((await webhooks().replay(JSON.parse(other).id)).outcome).toBe('unhandled');
  });
});

describe('WEBHOOK_PAYLOAD_RETENTION_DAYS=0', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, WEBHOOK_PAYLOAD_RETENTION_DAYS: '0' });
  });
  afterAll(() => app.close());

  it('keeps no payload, so nothing can be replayed', async () => {
    const body = JSON.stringify(providerEvent('product.created', productObject()));
    expect((await deliver(app, body)).json().outcome).toBe('applied');
    const id = JSON.parse(body).id as string;
    const [row] = await app.deps.database.db.select().from(webhookEvents).where(eq(webhookEvents.id, id));
    expect(row).toMatchObject({ outcome: 'applied', payload: null });
    await expect(app.deps.services.webhooks.replay(id)).rejects.toMatchObject({ code: 'webhook_payload_not_kept' });
  });
});
