import { randomBytes } from 'node:crypto';
import { eq, like } from 'drizzle-orm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newUser, newWorkspace } from '../../../../test/support/factories.js';
import { deliver, nowSeconds, type ProviderEvent, providerEvent, TEST_WEBHOOK_SECRET } from '../../../../test/support/webhook.js';
import { useTestApp } from '../../../../test/support/app.js';
import { billingCustomers, features, prices, productFeatures, products, subscriptionItems, subscriptions } from '../billing.table.js';

/**
 * Property: whatever order the provider delivers a history of product, price and subscription
 * events in, and however often it repeats some of them, the workspace ends with the same plan
 * response (and the same mirrored records) as when the history arrives once, in order.
 *
 * Each run lives under its own id prefix (products, prices, subscriptions, events, customer,
 * workspace), so the in-order and the shuffled replay share one database without truncation;
 * snapshots replace the prefix and the workspace id with placeholders before comparing.
 */

const t = useTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
const db = () => t.deps.database.db;

const featureKeys = ['chat', 'kb', 'api', 'sso'];
const priceKeys = ['price_a1', 'price_a2', 'price_b1'] as const;
const priceProduct: Record<(typeof priceKeys)[number], string> = { price_a1: 'prod_a', price_a2: 'prod_a', price_b1: 'prod_b' };

const productVersion = fc.record({
  type: fc.constantFrom('product.created', 'product.updated', 'product.deleted'),
  name: fc.constantFrom('Alpha', 'Beta'),
  active: fc.boolean(),
  plan: fc.constantFrom('pro', 'team', 'business', 'enterprise', undefined),
  features: fc.subarray(featureKeys),
});

const priceVersion = fc.record({
  type: fc.constantFrom('price.created', 'price.updated', 'price.deleted'),
  active: fc.boolean(),
  unitAmount: fc.constantFrom(1000, 2000),
  recurring: fc.constantFrom(
    { interval: 'month', interval_count: 1 },
    { interval: 'year', interval_count: 1 },
    { interval: 'month', interval_count: 3 },
    null,
  ),
});

const subscriptionVersion = fc.record({
  type: fc.constantFrom('customer.subscription.created', 'customer.subscription.updated', 'customer.subscription.deleted'),
  status: fc.constantFrom('active', 'active', 'trialing', 'past_due', 'incomplete', 'unpaid', 'canceled', 'incomplete_expired'),
  items: fc.subarray([...priceKeys], { minLength: 1 }),
  cancelAtPeriodEnd: fc.boolean(),
});
type SubscriptionVersion = typeof subscriptionVersion extends fc.Arbitrary<infer T> ? T : never;

const ends = (v: SubscriptionVersion) => v.type === 'customer.subscription.deleted' || v.status === 'canceled' || v.status === 'incomplete_expired';

const history = fc.record({
  products: fc.tuple(fc.array(productVersion, { minLength: 1, maxLength: 3 }), fc.array(productVersion, { maxLength: 2 })),
  prices: fc.tuple(
    fc.array(priceVersion, { minLength: 1, maxLength: 2 }),
    fc.array(priceVersion, { maxLength: 2 }),
    fc.array(priceVersion, { maxLength: 2 }),
  ),
  subscriptions: fc.oneof(
    fc.tuple(fc.array(subscriptionVersion, { minLength: 1, maxLength: 4 })),
    // Two subscriptions naming the workspace: the first one ends at some point (a workspace
    // changes subscription after the first ends; two living ones at once would be decided by
    // arrival, which the spec's "first attached keeps it" rule makes order-dependent by design).
    fc
      .tuple(fc.array(subscriptionVersion, { minLength: 1, maxLength: 3 }), fc.array(subscriptionVersion, { minLength: 1, maxLength: 3 }))
      .map(([first, second]) =>
        first.some(ends) ? [first, second] : [[...first, { ...first[0]!, type: 'customer.subscription.deleted' as const }], second],
      ),
  ),
});
type History = typeof history extends fc.Arbitrary<infer T> ? T : never;

interface Entry {
  type: string;
  object: (ctx: RunContext) => Record<string, unknown>;
}

interface RunContext {
  prefix: string;
  workspaceId: string;
  customer: string;
  base: number;
}

/** Every version of every object, in a fixed order (times are assigned separately). */
function entries(h: History): Entry[] {
  const list: Entry[] = [];
  h.products.forEach((versions, p) => {
    const id = p === 0 ? 'prod_a' : 'prod_b';
    for (const v of versions) {
      list.push({
        type: v.type,
        object: (c) => ({
          id: `${c.prefix}${id}`,
          object: 'product',
          name: v.name,
          active: v.active,
          metadata: { ...(v.plan ? { plan: v.plan } : {}), ...(v.features.length ? { features: v.features.join(' ') } : {}) },
        }),
      });
    }
  });
  h.prices.forEach((versions, p) => {
    const key = priceKeys[p]!;
    for (const v of versions) {
      list.push({
        type: v.type,
        object: (c) => ({
          id: `${c.prefix}${key}`,
          object: 'price',
          product: `${c.prefix}${priceProduct[key]}`,
          active: v.active,
          currency: 'usd',
          unit_amount: v.unitAmount,
          recurring: v.recurring,
        }),
      });
    }
  });
  h.subscriptions.forEach((versions, s) => {
    for (const v of versions) {
      list.push({
        type: v.type,
        object: (c) => {
          const start = c.base - 86400;
          return {
            id: `${c.prefix}sub_${s}`,
            object: 'subscription',
            customer: c.customer,
            status: v.type === 'customer.subscription.deleted' ? 'canceled' : v.status,
            current_period_start: start,
            current_period_end: start + 30 * 86400,
            billing_cycle_anchor: start,
            trial_start: v.status === 'trialing' ? start : null,
            trial_end: v.status === 'trialing' ? start + 14 * 86400 : null,
            cancel_at: null,
            cancel_at_period_end: v.cancelAtPeriodEnd,
            canceled_at: v.type === 'customer.subscription.deleted' ? start + 100 : null,
            ended_at: null,
            metadata: { workspace_id: c.workspaceId },
            items: {
              data: v.items.map((key) => ({
                id: `${c.prefix}si_${s}_${key}`,
                price: { id: `${c.prefix}${key}`, product: `${c.prefix}${priceProduct[key]}` },
                quantity: 1,
              })),
            },
          };
        },
      });
    }
  });
  return list;
}

/** A fresh workspace with an owner who has a customer account record, under a new prefix. */
async function newRun(base: number): Promise<RunContext & { owner: Awaited<ReturnType<typeof newUser>> }> {
  const prefix = `r${randomBytes(4).toString('hex')}_`;
  const owner = await newUser(t, { name: 'Owner' });
  const ws = await newWorkspace(t, owner);
  const customer = `${prefix}cus`;
  await db().insert(billingCustomers).values({ providerCustomerId: customer, userId: owner.id });
  return { prefix, workspaceId: ws.id, customer, base, owner };
}

async function send(event: ProviderEvent) {
  const res = await deliver(t, event);
  expect(res.statusCode, res.body).toBe(200);
}

/** The plan response and the run's mirrored records, with run-specific ids as placeholders. */
async function snapshot(run: Awaited<ReturnType<typeof newRun>>) {
  const plan = (await t.get(`/api/workspaces/${run.workspaceId}/plan/`, run.owner)).json();
  expect(plan.billing_contact.id).toBe(run.owner.id);
  delete plan.billing_contact;
  const mine = `${run.prefix}%`;
  const productRows = await db().select().from(products).where(like(products.providerProductId, mine));
  const priceRows = await db().select().from(prices).where(like(prices.providerPriceId, mine));
  const subscriptionRows = await db().select().from(subscriptions).where(like(subscriptions.providerSubscriptionId, mine));
  const records = {
    products: await Promise.all(
      productRows.map(async ({ id, createdAt: _c, updatedAt: _u, ...rest }) => ({
        ...rest,
        features: (
          await db()
            .select({ key: features.key })
            .from(productFeatures)
            .innerJoin(features, eq(features.id, productFeatures.featureId))
            .where(eq(productFeatures.productId, id))
        )
          .map((f) => f.key)
          .sort(),
      })),
    ),
    prices: priceRows.map(({ id: _i, createdAt: _c, updatedAt: _u, ...rest }) => rest),
    subscriptions: await Promise.all(
      subscriptionRows.map(async ({ id, createdAt: _c, updatedAt: _u, workspaceId, ...rest }) => ({
        ...rest,
        // Where an ended or waiting subscription sits depends on arrival; the one that grants does not.
        ...(['active', 'trialing', 'past_due'].includes(rest.status) ? { workspaceId } : {}),
        items: (await db().select().from(subscriptionItems).where(eq(subscriptionItems.subscriptionId, id)))
          .map((i) => `${i.providerItemId} ${i.providerPriceId} ${i.providerProductId} ${i.quantity}`)
          .sort(),
      })),
    ),
  };
  const sortBy = <T extends Record<string, unknown>>(rows: T[], key: keyof T) => rows.sort((a, b) => String(a[key]).localeCompare(String(b[key])));
  sortBy(records.products, 'providerProductId');
  sortBy(records.prices, 'providerPriceId');
  sortBy(records.subscriptions, 'providerSubscriptionId');
  return JSON.parse(JSON.stringify({ plan, records }).replaceAll(run.prefix, 'RUN_').replaceAll(run.workspaceId, 'WORKSPACE'));
}

describe('webhook convergence (property)', () => {
  it('ends in the in-order state whatever the delivery order and duplicates', async () => {
    const scenario = history.chain((h) => {
      const n = entries(h).length;
      const indices = [...Array(n).keys()];
      return fc.record({
        h: fc.constant(h),
        // Which version happened when (distinct, increasing `created` times).
        timeline: fc.shuffledSubarray(indices, { minLength: n, maxLength: n }),
        delivery: fc.shuffledSubarray(indices, { minLength: n, maxLength: n }),
        duplicates: fc.array(fc.tuple(fc.nat({ max: n - 1 }), fc.nat({ max: n })), { maxLength: 4 }),
      });
    });

    await fc.assert(
      fc.asyncProperty(scenario, async ({ h, timeline, delivery, duplicates }) => {
        const list = entries(h);
        const base = nowSeconds() - 10_000;
        const createdOf = (index: number) => base + timeline.indexOf(index);
        const build = (run: RunContext) =>
          list.map((entry, index) =>
            providerEvent(entry.type, entry.object(run), { id: `evt_${run.prefix}${index}`, created: createdOf(index) }),
          );

        const inOrder = await newRun(base);
        const ordered = build(inOrder);
        for (const index of timeline) await send(ordered[index]!);

        const shuffled = await newRun(base);
        const events = build(shuffled);
        const sequence = delivery.map((index) => events[index]!);
        for (const [index, position] of duplicates) sequence.splice(position, 0, events[index]!);
        for (const event of sequence) await send(event);

        expect(await snapshot(shuffled)).toEqual(await snapshot(inOrder));
      }),
      { numRuns: 30 },
    );
    // Room for shrinking when a counterexample turns up; a passing run takes a few seconds.
  }, 180_000);
});
