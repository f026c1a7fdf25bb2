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
