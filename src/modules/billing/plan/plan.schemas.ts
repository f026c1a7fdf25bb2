import { z } from 'zod';
import { modelTiers } from '../../models/index.js';
import { planKeys } from './plans.js';

const timestamp = z.iso.datetime({ offset: true });

export const creditUsageOut = z.object({
  credit_limit: z.number(),
  total_cost_used: z.number(),
  percentage_used: z.number(),
});

export const planOut = z.object({
  plan: z.object({
    key: z.enum(planKeys),
    name: z.string(),
    monthly_price_cents: z.number().int(),
    ai_credit: z.number(),
    max_documents: z.number().int(),
    max_storage_bytes: z.number().int(),
    max_file_size_bytes: z.number().int(),
    model_tiers: z.array(z.enum(modelTiers)),
    default_model: z.string(),
  }),
  interval: z.string(),
  subscription: z
    .object({
      status: z.string(),
      trial_end: timestamp.nullable(),
      period_end: timestamp.nullable(),
      cancel_at: timestamp.nullable(),
      cancel_at_period_end: z.boolean(),
    })
    .nullable(),
  /** A plan granted by an operator (admin CLI), in force now; it decided `plan`. */
  override: z.object({ plan: z.enum(planKeys), ends_at: timestamp.nullable(), reason: z.string() }).nullable(),
  billing_contact: z.object({ id: z.number().int(), name: z.string(), email: z.string() }),
  viewer: z.object({ can_manage_billing: z.boolean(), is_billing_contact: z.boolean() }),
  usage: z.object({
    documents: z.number().int(),
    storage_bytes: z.number().int(),
    credit_used: z.number(),
    credit_limit: z.number(),
    credit_renews_at: timestamp.nullable(),
  }),
});
export type PlanOut = z.output<typeof planOut>;
