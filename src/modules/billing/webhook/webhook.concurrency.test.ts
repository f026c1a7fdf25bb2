import { eq, sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../../test/support/app.js';
import {
  deliver,
  nowSeconds,
  priceObject,
  productObject,
  type ProviderEvent,
  providerEvent,
  subscriptionObject,
  TEST_WEBHOOK_SECRET,
  workspaceWithCatalog,
} from '../../../../test/support/webhook.js';
import { queryRows } from '../../../db/client.js';
import { prices, products, subscriptionItems, subscriptions } from '../billing.table.js';

/**
 * Each event is one statement without an explicit transaction (docs/decisions.md, "Hot paths"):
 * two events of one object processed at the same time must still end in the newer one's state,
 * whichever reaches the row first. On PostgreSQL a second connection holds the row locked while
 * both deliveries start, so both read the same row version and then queue for the lock (in the
 * order they were sent); the one that comes second must not write what it decided on the old
 * version. PGlite runs one statement at a time, so there the deliveries only overlap in the app.
 */
const t = useTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
const db = () => t.deps.database.db;
const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

const setup = () => workspaceWithCatalog(t);

/**
 * Delivers `first` then `second` (sent 100 ms apart) while another connection holds `lockSql`'s
 * rows locked (PostgreSQL), releasing them once both are waiting; at once on PGlite.
 */
async function race(first: ProviderEvent, second: ProviderEvent, lockSql: string, params: unknown[]) {
  if (!onPostgres) return Promise.all([deliver(t, first), deliver(t, second)]);
  const blocker = new pg.Client({ connectionString: t.database.url });
  await blocker.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(lockSql, params);
    const a = deliver(t, first);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const b = deliver(t, second);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await blocker.query('COMMIT');
    return await Promise.all([a, b]);
  } finally {
    await blocker.end();
  }
}

const subscriptionRow = async (id: string) =>
  (await db().select().from(subscriptions).where(eq(subscriptions.providerSubscriptionId, id)))[0]!;
const itemsOf = async (subscriptionId: string) =>
  (await db().select().from(subscriptionItems).where(eq(subscriptionItems.subscriptionId, subscriptionId))).map((i) => i.providerPriceId).sort();

describe('two events of one subscription at the same time', () => {
  for (const order of ['newer first', 'older first'] as const) {
    it(`end in the newer event's state (${order})`, async () => {
      const s = await setup();
      const created = nowSeconds() - 100;
      const base = { id: 'sub_race', customer: s.customer, workspaceId: s.ws.id };
      await deliver(t, providerEvent('customer.subscription.created', subscriptionObject({ ...base, items: [{ price: 'price_pro', product: 'prod_pro' }] }), { created }));
      const older = providerEvent(
        'customer.subscription.updated',
        subscriptionObject({ ...base, status: 'past_due', items: [{ id: 'si_old', price: 'price_pro', product: 'prod_pro' }] }),
        { created: created + 10 },
      );
      const newer = providerEvent(
        'customer.subscription.updated',
        subscriptionObject({ ...base, status: 'active', items: [{ id: 'si_new', price: 'price_team', product: 'prod_team' }] }),
        { created: created + 20 },
      );
      const [first, second] = order === 'newer first' ? [newer, older] : [older, newer];
      const responses = await race(first, second, 'SELECT 1 FROM subscriptions WHERE provider_subscription_id = $1 FOR UPDATE', ['sub_race']);
      expect(responses.map((r) => r.statusCode)).toEqual([200, 200]);
      const outcomes = Object.fromEntries(responses.map((r, i) => [[first, second][i]!.id, r.json().outcome as string]));
      expect(outcomes[newer.id]).toBe('applied');
      // The older one is stale when it comes second, applied (then overwritten) when it comes first.
      expect(outcomes[older.id]).toBe(order === 'newer first' ? 'stale' : 'applied');
      const row = await subscriptionRow('sub_race');
      expect(row).toMatchObject({ status: 'active', lastEventAt: new Date((created + 20) * 1000), workspaceId: s.ws.id });
      expect(await itemsOf(row.id)).toEqual(['price_team']);
      const plan = await t.get(`/api/workspaces/${s.ws.id}/plan/`, s.owner);
      expect(plan.json().plan.key).toBe('team');
    });
  }

  it('end in the newer state when both create the subscription', async () => {
    const s = await setup();
    const created = nowSeconds() - 100;
    const base = { id: 'sub_new_race', customer: s.customer, workspaceId: s.ws.id };
    const older = providerEvent('customer.subscription.created', subscriptionObject({ ...base, status: 'incomplete', items: [{ price: 'price_pro', product: 'prod_pro' }] }), { created });
    const newer = providerEvent('customer.subscription.updated', subscriptionObject({ ...base, status: 'active', items: [{ price: 'price_team', product: 'prod_team' }] }), { created: created + 5 });
    // The workspace row locked: both statements see no subscription and wait to attach it.
    const responses = await race(newer, older, 'SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE', [s.ws.id]);
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200]);
    const row = await subscriptionRow('sub_new_race');
    expect(row).toMatchObject({ status: 'active', workspaceId: s.ws.id });
    expect(await itemsOf(row.id)).toEqual(['price_team']);
    expect(await db().select().from(subscriptions).where(eq(subscriptions.providerSubscriptionId, 'sub_new_race'))).toHaveLength(1);
  });
});

describe('two events of one catalog object at the same time', () => {
  it('a product ends with the newer event’s fields and features (older first)', async () => {
    await deliver(t, providerEvent('product.created', productObject({ id: 'prod_race', metadata: { plan: 'pro', features: 'chat' } }), { created: nowSeconds() - 100 }));
    const older = providerEvent('product.updated', productObject({ id: 'prod_race', name: 'Old', metadata: { plan: 'pro', features: 'api kb' } }), { created: nowSeconds() - 50 });
    const newer = providerEvent('product.updated', productObject({ id: 'prod_race', name: 'New', metadata: { plan: 'team', features: 'sso' } }), { created: nowSeconds() - 40 });
    const responses = await race(older, newer, 'SELECT 1 FROM products WHERE provider_product_id = $1 FOR UPDATE', ['prod_race']);
    expect(responses.map((r) => r.json().outcome)).toEqual(['applied', 'applied']);
    const [row] = await db().select().from(products).where(eq(products.providerProductId, 'prod_race'));
    expect(row).toMatchObject({ name: 'New', plan: 'team' });
    const keys = await queryRows<{ key: string }>(
      db(),
      sql`SELECT f.key FROM product_features pf JOIN features f ON f.id = pf.feature_id WHERE pf.product_id = ${row!.id} ORDER BY f.key`,
    );
    expect(keys.map((r) => r.key)).toEqual(['sso']);
  });

  it('a price ends with the newer event’s fields (newer first: the older is stale)', async () => {
    await deliver(t, providerEvent('price.created', priceObject({ id: 'price_race', product: 'prod_x' }), { created: nowSeconds() - 100 }));
    const older = providerEvent('price.updated', priceObject({ id: 'price_race', product: 'prod_x', unit_amount: 1000 }), { created: nowSeconds() - 50 });
    const newer = providerEvent('price.updated', priceObject({ id: 'price_race', product: 'prod_x', unit_amount: 2000 }), { created: nowSeconds() - 40 });
    const responses = await race(newer, older, 'SELECT 1 FROM prices WHERE provider_price_id = $1 FOR UPDATE', ['price_race']);
    expect(responses.map((r) => r.json().outcome)).toEqual(['applied', 'stale']);
    const [row] = await db().select().from(prices).where(eq(prices.providerPriceId, 'price_race'));
    expect(row).toMatchObject({ unitAmount: 2000 });
  });
});
