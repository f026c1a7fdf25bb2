import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createDeps } from '../../src/deps.js';
import { type TestApp, testConfig } from './app.js';
import { testDatabase, truncateAll } from './db.js';
import { type CapturedLog, captureLog } from './log.js';
import { newUser, newWorkspace, type TestUser, type TestWorkspace } from './factories.js';
import { billingCustomers } from '../../src/modules/billing/billing.table.js';

/**
 * Signed payment-provider events for tests: payloads shaped like the provider's (Stripe's) JSON
 * and a `Payment-Signature` header made exactly as the provider makes it.
 */
export const TEST_WEBHOOK_SECRET = 'whsec_test_0123456789abcdefghijklmnopqrstuv';
export const WEBHOOK_URL = '/api/subscriptions/webhook';

export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** `t=<unix>,v1=<hex HMAC-SHA256 of "t.payload">`, by the provider SDK's own test helper. */
export function signPayload(payload: string, options: { secret?: string; timestamp?: number } = {}): string {
  return Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? TEST_WEBHOOK_SECRET,
    timestamp: options.timestamp ?? nowSeconds(),
  });
}

export interface DeliverOptions {
  secret?: string;
  timestamp?: number;
  /** A header to send instead of a correct one; null sends none. */
  header?: string | null;
  contentType?: string;
}

/** POSTs the event (object or exact body text) to the webhook with a signature of that body. */
export function deliver(t: Pick<TestApp, 'app'>, event: object | string, options: DeliverOptions = {}): Promise<LightMyRequestResponse> {
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const header = options.header === undefined ? signPayload(body, options) : options.header;
  return t.app.inject({
    method: 'POST',
    url: WEBHOOK_URL,
    headers: {
      'content-type': options.contentType ?? 'application/json',
      ...(header === null ? {} : { 'payment-signature': header }),
    },
    payload: body,
  });
}

let sequence = 0;
const uniq = () => `${++sequence}${randomBytes(3).toString('hex')}`;

export interface ProviderEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  api_version: string;
  livemode: boolean;
  data: { object: Record<string, unknown> };
}

/** An event envelope; `created` defaults to now (seconds). */
export function providerEvent(
  type: string,
  object: Record<string, unknown>,
  options: { id?: string; created?: number } = {},
): ProviderEvent {
  return {
    id: options.id ?? `evt_${uniq()}`,
    object: 'event',
    type,
    created: options.created ?? nowSeconds(),
    api_version: '2026-10-28.endive',
    livemode: false,
    data: { object },
  };
}

export function productObject(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `prod_${uniq()}`,
    object: 'product',
    name: 'Pro',
    active: true,
    description: null,
    metadata: { plan: 'pro' },
    ...overrides,
  };
}

export function priceObject(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `price_${uniq()}`,
    object: 'price',
    product: 'prod_x',
    active: true,
    currency: 'usd',
    unit_amount: 2000,
    type: 'recurring',
    recurring: { interval: 'month', interval_count: 1, usage_type: 'licensed' },
    ...overrides,
  };
}

export interface SubscriptionOptions {
  id?: string;
  customer?: string;
  status?: string;
  workspaceId?: string | null;
  /** Price ids (with their products) of the items. */
  items?: Array<{ price: string; product: string; id?: string; quantity?: number }>;
  periodStart?: number;
  periodEnd?: number;
  /** Put the period on the items only, as newer API versions do. */
  periodOnItems?: boolean;
  extra?: Record<string, unknown>;
}

export function subscriptionObject(options: SubscriptionOptions = {}): Record<string, unknown> {
  const start = options.periodStart ?? nowSeconds() - 86400;
  const end = options.periodEnd ?? start + 30 * 86400;
  const period = { current_period_start: start, current_period_end: end };
  const items = (options.items ?? []).map((item, index) => ({
    id: item.id ?? `si_${index}_${options.id ?? 'x'}`,
    object: 'subscription_item',
    price: {
      id: item.price,
      object: 'price',
      product: item.product,
      recurring: { interval: 'month', interval_count: 1 },
    },
    quantity: item.quantity ?? 1,
    ...(options.periodOnItems ? period : {}),
  }));
  return {
    id: options.id ?? `sub_${uniq()}`,
    object: 'subscription',
    customer: options.customer ?? 'cus_test',
    status: options.status ?? 'active',
    ...(options.periodOnItems ? {} : period),
    billing_cycle_anchor: start,
    trial_start: null,
    trial_end: null,
    cancel_at: null,
    cancel_at_period_end: false,
    canceled_at: null,
    ended_at: null,
    metadata: options.workspaceId ? { workspace_id: options.workspaceId } : {},
    items: { object: 'list', data: items, has_more: false },
    ...options.extra,
  };
}

// --- an app whose log lines tests can read ------------------------------------------------------

export interface LoggedTestApp extends TestApp {
  logs: CapturedLog;
  /** Warning lines (level 40) logged so far, newest last. */
  warnings(): Array<Record<string, unknown>>;
}

/** Like `createTestApp`, with the app's logger captured in memory (the webhook's warnings are part of its contract). */
export async function createLoggedTestApp(env: Record<string, string> = {}): Promise<LoggedTestApp> {
  const config = testConfig(env);
  const database = await testDatabase();
  const logs = captureLog('info');
  const deps = await createDeps(config, logs.log, { database });
  const app = await buildApp(deps);
  await app.ready();
  const request: TestApp['request'] = (method, url, options = {}) =>
    app.inject({
      method,
      url,
      headers: { ...options.headers, ...(options.as ? { authorization: `Bearer ${options.as.token}` } : {}) },
      query: options.query,
      ...(options.body !== undefined ? { payload: options.body as InjectOptions['payload'] } : {}),
    });
  return {
    app,
    deps,
    config,
    database,
    logs,
    warnings: () => logs.lines().filter((line) => line.level === 40),
    request,
    get: (url, as) => request('GET', url, { as }),
    post: (url, body, as) => request('POST', url, { body: body ?? {}, as }),
    put: (url, body, as) => request('PUT', url, { body: body ?? {}, as }),
    patch: (url, body, as) => request('PATCH', url, { body: body ?? {}, as }),
    delete: (url, as, body) => request('DELETE', url, { body, as }),
    async close() {
      await app.close();
      await deps.close();
      rmSync(config.DATA_DIR, { recursive: true, force: true });
    },
  };
}

/** The test-file hooks of `createLoggedTestApp`: one app per file, empty tables before each test. */
export function useLoggedTestApp(env: Record<string, string> = {}): LoggedTestApp {
  const holder = {} as LoggedTestApp;
  beforeAll(async () => {
    Object.assign(holder, await createLoggedTestApp(env));
  });
  beforeEach(async () => {
    await truncateAll(holder.database);
  });
  afterAll(async () => {
    await holder.close?.();
  });
  return holder;
}

/**
 * A workspace whose owner has a customer account record, and a mirrored Pro (`prod_pro`,
 * `price_pro`) and Team (`prod_team`, `price_team`) catalog, made an hour ago.
 */
export async function workspaceWithCatalog(t: TestApp): Promise<{ owner: TestUser; ws: TestWorkspace; customer: string }> {
  const owner = await newUser(t);
  const ws = await newWorkspace(t, owner);
  const customer = `cus_${owner.id}`;
  await t.deps.database.db.insert(billingCustomers).values({ providerCustomerId: customer, userId: owner.id });
  const created = nowSeconds() - 3600;
  for (const [product, plan, price] of [
    ['prod_pro', 'pro', 'price_pro'],
    ['prod_team', 'team', 'price_team'],
  ] as const) {
    for (const event of [
      providerEvent('product.created', productObject({ id: product, metadata: { plan } }), { created }),
      providerEvent('price.created', priceObject({ id: price, product }), { created }),
    ]) {
      const res = await deliver(t, event);
      if (res.statusCode !== 200) throw new Error(`setting up the catalog: ${res.statusCode} ${res.body}`);
    }
  }
  return { owner, ws, customer };
}
