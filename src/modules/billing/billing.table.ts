import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  date,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { users } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { uuidPrimaryKey } from '../../db/columns.js';

const ts = (name: string) => timestamp(name, { withTimezone: true });

/** Customer account record: a payment-provider customer id mapped to the local user who pays. */
export const billingCustomers = pgTable('billing_customers', {
  id: uuidPrimaryKey(),
  providerCustomerId: text('provider_customer_id').notNull().unique(),
  userId: integer('user_id')
    .notNull()
    .unique()
    .references(() => users.id, { onDelete: 'cascade' }),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const subscriptionStatuses = [
  'incomplete',
  'incomplete_expired',
  'trialing',
  'active',
  'past_due',
  'canceled',
  'unpaid',
  'paused',
] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];
/** Statuses that grant the workspace its plan. */
export const accessGrantingStatuses = ['active', 'trialing', 'past_due'] as const;
/** Statuses after which a subscription never comes back. */
export const endedStatuses = ['canceled', 'incomplete_expired'] as const;

/** Mirrored subscriptions. A workspace has at most one that grants access (partial unique index). */
export const subscriptions = pgTable(
  'subscriptions',
  {
    id: uuidPrimaryKey(),
    providerSubscriptionId: text('provider_subscription_id').notNull().unique(),
    providerCustomerId: text('provider_customer_id').notNull(),
    workspaceId: uuid('workspace_id').references(() => workspaces.id, { onDelete: 'set null' }),
    status: text('status').notNull(),
    currentPeriodStart: ts('current_period_start'),
    currentPeriodEnd: ts('current_period_end'),
    billingCycleAnchor: ts('billing_cycle_anchor'),
    trialStart: ts('trial_start'),
    trialEnd: ts('trial_end'),
    cancelAt: ts('cancel_at'),
    cancelAtPeriodEnd: boolean('cancel_at_period_end').notNull().default(false),
    canceledAt: ts('canceled_at'),
    endedAt: ts('ended_at'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    /** `created` of the newest provider event applied; older events are ignored. */
    lastEventAt: ts('last_event_at').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('subscriptions_one_granting_per_workspace')
      .on(t.workspaceId)
      .where(sql`${t.workspaceId} IS NOT NULL AND ${t.status} IN ('active', 'trialing', 'past_due')`),
    index('subscriptions_customer_idx').on(t.providerCustomerId),
  ],
);

/** Subscription items, recreated from every applied subscription event. */
export const subscriptionItems = pgTable(
  'subscription_items',
  {
    id: uuidPrimaryKey(),
    subscriptionId: uuid('subscription_id')
      .notNull()
      .references(() => subscriptions.id, { onDelete: 'cascade' }),
    providerItemId: text('provider_item_id').notNull(),
    providerPriceId: text('provider_price_id').notNull(),
    providerProductId: text('provider_product_id'),
    quantity: integer('quantity').notNull().default(1),
  },
  (t) => [index('subscription_items_subscription_idx').on(t.subscriptionId)],
);

export const products = pgTable('products', {
  id: uuidPrimaryKey(),
  providerProductId: text('provider_product_id').notNull().unique(),
  name: text('name').notNull().default(''),
  active: boolean('active').notNull().default(true),
  /** `pro`, `team` or `business` from metadata.plan; null counts as the free plan. */
  plan: text('plan'),
  metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
  lastEventAt: ts('last_event_at').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const prices = pgTable(
  'prices',
  {
    id: uuidPrimaryKey(),
    providerPriceId: text('provider_price_id').notNull().unique(),
    providerProductId: text('provider_product_id').notNull(),
    active: boolean('active').notNull().default(true),
    currency: text('currency').notNull().default('usd'),
    unitAmount: bigint('unit_amount', { mode: 'number' }),
    interval: text('interval'),
    intervalCount: integer('interval_count'),
    /** `<interval>_<interval_count>`, e.g. `month_1`; null for one-off prices. */
    freq: text('freq'),
    lastEventAt: ts('last_event_at').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('prices_product_idx').on(t.providerProductId)],
);

export const features = pgTable('features', {
  id: uuidPrimaryKey(),
  key: text('key').notNull().unique(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const productFeatures = pgTable(
  'product_features',
  {
    productId: uuid('product_id')
      .notNull()
      .references(() => products.id, { onDelete: 'cascade' }),
    featureId: uuid('feature_id')
      .notNull()
      .references(() => features.id, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.productId, t.featureId] })],
);

/** Inbox of every webhook event received, with the outcome of processing it. */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: text('id').primaryKey(),
    type: text('type').notNull(),
    /** The provider's `created` time of the event. */
    createdAt: ts('created_at').notNull(),
    receivedAt: ts('received_at').notNull().defaultNow(),
    outcome: text('outcome', { enum: ['applied', 'stale', 'ignored', 'skipped', 'unhandled', 'failed'] }).notNull(),
    error: text('error'),
    attempts: integer('attempts').notNull().default(1),
    /** The raw signed body as received, for replay by operators; cleared after the retention period. */
    payload: text('payload'),
  },
  (t) => [index('webhook_events_type_idx').on(t.type), index('webhook_events_received_idx').on(t.receivedAt)],
);

/**
 * A plan granted by an operator without the payment provider (admin CLI): it wins over the
 * subscription's plan until `ends_at` (null: until removed).
 */
export const planOverrides = pgTable('plan_overrides', {
  workspaceId: uuid('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  plan: text('plan').notNull(),
  endsAt: ts('ends_at'),
  reason: text('reason').notNull().default(''),
  createdBy: text('created_by').notNull().default(''),
  createdAt: ts('created_at').notNull().defaultNow(),
});

// --- credit ----------------------------------------------------------------------------------

export const usageKinds = ['chat', 'transcription', 'translation', 'embedding', 'ingestion'] as const;
export type UsageKind = (typeof usageKinds)[number];

/** Credit held for a model call in flight; it stops counting once settled, released or expired. */
export const creditReservations = pgTable(
  'credit_reservations',
  {
    id: uuidPrimaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    amountUsd: numeric('amount_usd', { precision: 14, scale: 8, mode: 'number' }).notNull(),
    /** The credit period whose running total (`credit_balances`) holds this amount; null only for reservations older than the totals. */
    periodStart: ts('period_start'),
    expiresAt: ts('expires_at').notNull(),
    closedAt: ts('closed_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('credit_reservations_open_idx').on(t.workspaceId).where(sql`${t.closedAt} IS NULL`)],
);

/**
 * Running credit totals per workspace and credit period: `used_usd` is the ledger's sum since
 * `period_start` (kept by a statement trigger on `credit_usage`), `reserved_usd` the credit held
 * by open reservations of the period. The gate checks and reserves in one UPDATE on this row, so
 * its cost does not grow with the ledger and no lock is held across round trips.
 */
export const creditBalances = pgTable(
  'credit_balances',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    periodStart: ts('period_start').notNull(),
    usedUsd: numeric('used_usd', { precision: 20, scale: 8, mode: 'number' }).notNull().default(0),
    reservedUsd: numeric('reserved_usd', { precision: 20, scale: 8, mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ name: 'credit_balances_pk', columns: [t.workspaceId, t.periodStart] })],
);

/** The credit ledger: one row per charged call. */
export const creditUsage = pgTable(
  'credit_usage',
  {
    id: uuidPrimaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    userId: integer('user_id').references(() => users.id, { onDelete: 'set null' }),
    kind: text('kind', { enum: usageKinds }).notNull(),
    model: text('model').notNull(),
    inputTokens: integer('input_tokens').notNull().default(0),
    outputTokens: integer('output_tokens').notNull().default(0),
    seconds: numeric('seconds', { precision: 12, scale: 3, mode: 'number' }).notNull().default(0),
    costUsd: numeric('cost_usd', { precision: 14, scale: 8, mode: 'number' }).notNull(),
    /** Unique per call, so a call is never charged twice. */
    referenceId: text('reference_id').notNull().unique(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('credit_usage_workspace_time_idx').on(t.workspaceId, t.createdAt),
    check('credit_usage_kind_check', sql`${t.kind} in ('chat', 'transcription', 'translation', 'embedding', 'ingestion')`),
  ],
);

/**
 * Daily totals of the ledger per (workspace, UTC day, user, kind, model), for usage analytics: a
 * month of a busy workspace is a few thousand of these instead of a million ledger rows. Kept by
 * a statement trigger on `credit_usage` (migration 0008), so every insert, whatever writes it,
 * counts once, in its own transaction. `user_id` 0 stands for "no user"; a deleted user's id stays
 * here (no foreign key) and analytics count it as no user, like the ledger's rows that lost it.
 */
export const creditUsageDaily = pgTable(
  'credit_usage_daily',
  {
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    day: date('day', { mode: 'string' }).notNull(),
    userId: integer('user_id').notNull().default(0),
    kind: text('kind').notNull(),
    model: text('model').notNull(),
    calls: bigint('calls', { mode: 'number' }).notNull().default(0),
    inputTokens: bigint('input_tokens', { mode: 'number' }).notNull().default(0),
    outputTokens: bigint('output_tokens', { mode: 'number' }).notNull().default(0),
    costUsd: numeric('cost_usd', { precision: 20, scale: 8 }).notNull().default('0'),
  },
  (t) => [primaryKey({ name: 'credit_usage_daily_pk', columns: [t.workspaceId, t.day, t.userId, t.kind, t.model] })],
);
