import { z } from 'zod';

/**
 * Structural schemas of the provider's (Stripe's) event JSON. They check what processing relies
 * on and ignore every other field, so new provider fields never break the webhook. Ids and
 * strings are bounded like every other input.
 */

export const handledEventTypes = [
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'product.created',
  'product.updated',
  'product.deleted',
  'price.created',
  'price.updated',
  'price.deleted',
] as const;
export type HandledEventType = (typeof handledEventTypes)[number];

export const webhookOutcomes = ['applied', 'stale', 'ignored', 'skipped', 'unhandled', 'failed'] as const;
export type WebhookOutcome = (typeof webhookOutcomes)[number];

const providerId = z.string().min(1).max(255);
/** Unix seconds, as the provider sends every timestamp. */
const unixSeconds = z.number().int().nonnegative().max(253402300799);
const optionalTime = unixSeconds.nullable().optional();
/** The provider's metadata: string keys and values (Stripe limits values to 500 characters). */
const metadata = z
  .record(z.string().max(40), z.string().max(500))
  .nullable()
  .optional()
  .transform((m) => m ?? {});
/** A reference that may arrive as an id or as the expanded object. */
const reference = z.union([providerId, z.object({ id: providerId })]).transform((r) => (typeof r === 'string' ? r : r.id));

export const eventEnvelope = z.object({
  id: providerId,
  type: z.string().min(1).max(255),
  created: unixSeconds,
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
});
export type EventEnvelope = z.output<typeof eventEnvelope>;

const recurring = z.object({ interval: z.enum(['day', 'week', 'month', 'year']), interval_count: z.number().int().min(1).max(1000) });

export const priceObject = z.object({
  id: providerId,
  object: z.literal('price').optional(),
  product: reference,
  active: z.boolean().optional().default(true),
  currency: z.string().min(1).max(10).optional().default('usd'),
  unit_amount: z.number().int().nullable().optional(),
  recurring: recurring.nullable().optional(),
});
export type PriceObject = z.output<typeof priceObject>;

export const productObject = z.object({
  id: providerId,
  object: z.literal('product').optional(),
  name: z.string().max(1000).optional().default(''),
  active: z.boolean().optional().default(true),
  metadata,
});
export type ProductObject = z.output<typeof productObject>;

const subscriptionItem = z.object({
  id: providerId,
  price: z.object({ id: providerId, product: reference }),
  quantity: z.number().int().nonnegative().nullable().optional(),
  // Newer API versions keep the billing period on the items only.
  current_period_start: optionalTime,
  current_period_end: optionalTime,
});

export const subscriptionObject = z.object({
  id: providerId,
  object: z.literal('subscription').optional(),
  customer: reference,
  // Any status string is stored; only active, trialing and past_due grant access, so a status
  // the provider adds later grants nothing rather than failing delivery.
  status: z.string().min(1).max(64),
  current_period_start: optionalTime,
  current_period_end: optionalTime,
  billing_cycle_anchor: optionalTime,
  trial_start: optionalTime,
  trial_end: optionalTime,
  cancel_at: optionalTime,
  cancel_at_period_end: z.boolean().nullable().optional(),
  canceled_at: optionalTime,
  ended_at: optionalTime,
  metadata,
  items: z.object({ data: z.array(subscriptionItem).max(100) }),
});
export type SubscriptionObject = z.output<typeof subscriptionObject>;

/** The object schema each handled event type carries. */
export function objectSchemaFor(type: HandledEventType) {
  if (type.startsWith('customer.subscription.')) return subscriptionObject;
  if (type.startsWith('product.')) return productObject;
  return priceObject;
}

export const isHandledType = (type: string): type is HandledEventType =>
  (handledEventTypes as readonly string[]).includes(type);

export const webhookAck = z.object({
  received: z.literal(true),
  /** What processing did with the event (for a redelivery: what it did the first time). */
  outcome: z.enum(webhookOutcomes),
  /** True when the event id had already been processed and nothing was applied this time. */
  duplicate: z.boolean(),
});
export type WebhookAck = z.output<typeof webhookAck>;
