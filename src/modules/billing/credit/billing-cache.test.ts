import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, useTestApp } from '../../../../test/support/app.js';
import { newUser, newWorkspace } from '../../../../test/support/factories.js';
import { waitUntil } from '../../../../test/support/wait.js';
import {
  deliver,
  priceObject,
  productObject,
  providerEvent,
  subscriptionObject,
  TEST_WEBHOOK_SECRET,
} from '../../../../test/support/webhook.js';
import { billingCustomers } from '../billing.table.js';

/**
 * The credit gate's cached billing state (docs/decisions.md, "Hot paths"), with two API
 * instances of one deployment (same database, same pub/sub): a plan change made through one —
 * a payment-provider event, an operator's override — reaches the gate of the other within a
 * second, far below the cache's TTL.
 */
const a = useTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
let b: TestApp;
beforeAll(async () => {
  b = process.env.TEST_REDIS_URL
    ? await createTestApp({ REDIS_PREFIX: a.config.REDIS_PREFIX, PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET }, {}, { startWorker: false })
    : await createTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET }, { pubsub: a.deps.pubsub }, { startWorker: false });
});
afterAll(async () => {
  await b?.close();
});

/** What B's gate answers for the team-tier model: 'ok' or the refusal's code. */
async function gateOnB(workspaceId: string): Promise<string> {
  const model = b.deps.catalog.chatModel('o3')!;
  return b.deps.services.credit.check({ workspace: workspaceId, model }).then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? 'error',
  );
}

const within1s = (workspaceId: string, expected: string) =>
  waitUntil(async () => ((await gateOnB(workspaceId)) === expected ? true : undefined), 1000);

describe('a plan change reaches the other instance’s gate within a second', () => {
  it('a subscription event processed by one instance', async () => {
    const owner = await newUser(a);
    const ws = await newWorkspace(a, owner);
    const customer = `cus_cache_${owner.id}`;
    await a.deps.database.db.insert(billingCustomers).values({ providerCustomerId: customer, userId: owner.id });
    const created = Math.floor(Date.now() / 1000) - 3600;
    await deliver(a, providerEvent('product.created', productObject({ id: 'prod_cache_team', metadata: { plan: 'team' } }), { created }));
    await deliver(a, providerEvent('price.created', priceObject({ id: 'price_cache_team', product: 'prod_cache_team' }), { created }));
    expect(await gateOnB(ws.id)).toBe('model_not_in_plan');
    expect(await gateOnB(ws.id)).toBe('model_not_in_plan'); // cached now

    const sub = subscriptionObject({ customer, workspaceId: ws.id, items: [{ price: 'price_cache_team', product: 'prod_cache_team' }] });
    const res = await deliver(a, providerEvent('customer.subscription.created', sub));
    expect(res.json().outcome).toBe('applied');
    await within1s(ws.id, 'ok');
  });

  it('an operator’s plan override set and cleared through one instance', async () => {
    const owner = await newUser(a);
    const ws = await newWorkspace(a, owner);
    expect(await gateOnB(ws.id)).toBe('model_not_in_plan');
    await a.deps.services.planOverrides.set(ws.id, { plan: 'team' });
    await within1s(ws.id, 'ok');
    await a.deps.services.planOverrides.clear(ws.id);
    await within1s(ws.id, 'model_not_in_plan');
  });
});

describe('what a payment-provider event drops', () => {
  /**
   * The billing tags of every invalidation published on the shared pub/sub, in order. Messages of
   * one publisher arrive in order, so once a later event's tags are seen, an earlier event that
   * published nothing has shown it.
   */
  async function published() {
    const seen: string[][] = [];
    const unsubscribe = await a.deps.pubsub.subscribe('cache-invalidate', (message) => {
      const tags = (JSON.parse(message) as string[]).filter((tag) => tag.startsWith('billing'));
      if (tags.length) seen.push(tags);
    });
    const next = async () => {
      await waitUntil(() => (seen.length ? true : undefined), 1000);
      return seen.shift()!;
    };
    return { seen, next, unsubscribe };
  }

  it('a subscription event that applied drops its workspace only; a stale, duplicate or skipped event nothing', async () => {
    const owner = await newUser(a);
    const ws = await newWorkspace(a, owner);
    const customer = `cus_drop_${owner.id}`;
    await a.deps.database.db.insert(billingCustomers).values({ providerCustomerId: customer, userId: owner.id });
    const created = Math.floor(Date.now() / 1000) - 3600;
    const bus = await published();
    try {
      await deliver(a, providerEvent('product.created', productObject({ id: 'prod_drop', metadata: { plan: 'team' } }), { created }));
      expect(await bus.next()).toEqual(['billing']);

      const sub = (status: string) => subscriptionObject({ id: `sub_drop_${owner.id}`, customer, workspaceId: ws.id, status, items: [{ price: 'price_drop', product: 'prod_drop' }] });
      const applied = providerEvent('customer.subscription.created', sub('active'), { created: created + 10 });
      expect((await deliver(a, applied)).json().outcome).toBe('applied');
      expect(await bus.next()).toEqual([`billing:${ws.id}`]);

      expect((await deliver(a, providerEvent('customer.subscription.updated', sub('past_due'), { created: created + 5 }))).json().outcome).toBe('stale');
      expect((await deliver(a, applied)).json().duplicate).toBe(true);
      const stranger = subscriptionObject({ customer: 'cus_nobody', workspaceId: ws.id, items: [{ price: 'price_drop', product: 'prod_drop' }] });
      expect((await deliver(a, providerEvent('customer.subscription.created', stranger))).json().outcome).toBe('skipped');
      expect((await deliver(a, providerEvent('product.updated', productObject({ id: 'prod_drop' }), { created: created - 10 }))).json().outcome).toBe('stale');
      // A marker that applies: nothing was published before it.
      await deliver(a, providerEvent('price.created', priceObject({ id: `price_drop_${owner.id}`, product: 'prod_drop' }), { created }));
      expect(await bus.next()).toEqual(['billing']);
      expect(bus.seen).toEqual([]);
    } finally {
      await bus.unsubscribe();
    }
  });
});
