import { SpanKind } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../../test/support/app.js';
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
import { recordSpans } from '../../../../test/support/spans.js';
import { billingCustomers } from '../billing.table.js';

/**
 * Issue 14, item 5: at most 5 statements per subscription event. Each event is one statement,
 * without BEGIN/COMMIT, for every type, new or redelivered (docs/decisions.md, "Hot paths").
 */
const exporter = recordSpans();
const t = useTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });

/** The SQL statements run while the webhook handled `event` (in its request's trace). */
async function statementsOf(event: object): Promise<string[]> {
  exporter.reset();
  const res = await deliver(t, event);
  expect(res.statusCode).toBe(200);
  const spans = exporter.getFinishedSpans();
  const request = spans.find((s) => s.kind === SpanKind.SERVER && s.attributes['http.route'] === '/api/subscriptions/webhook');
  expect(request).toBeDefined();
  return spans
    .filter((s) => s.spanContext().traceId === request!.spanContext().traceId && s.attributes['db.system.name'] === 'postgresql')
    .map((s) => String(s.attributes['db.query.text']));
}

describe('statements per webhook event', () => {
  it('one for a new or a redelivered subscription, product or price event, none of them BEGIN or COMMIT', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const customer = `cus_${owner.id}`;
    await t.deps.database.db.insert(billingCustomers).values({ providerCustomerId: customer, userId: owner.id });
    const created = nowSeconds() - 100;
    const product = providerEvent('product.created', productObject({ id: 'prod_count', metadata: { plan: 'pro', features: 'chat kb' } }), { created });
    const price = providerEvent('price.created', priceObject({ id: 'price_count', product: 'prod_count' }), { created });
    const sub = providerEvent(
      'customer.subscription.created',
      subscriptionObject({ id: 'sub_count', customer, workspaceId: ws.id, items: [{ price: 'price_count', product: 'prod_count' }] }),
      { created },
    );
    const update = providerEvent(
      'customer.subscription.updated',
      subscriptionObject({ id: 'sub_count', customer, workspaceId: ws.id, status: 'past_due', items: [{ price: 'price_count', product: 'prod_count' }] }),
      { created: created + 1 },
    );
    for (const event of [product, price, sub, update, sub, product]) {
      const statements = await statementsOf(event);
      expect(statements, statements.join('\n')).toHaveLength(1);
      expect(statements[0]).not.toMatch(/^\s*(begin|commit)\b/i);
    }
  });
});
