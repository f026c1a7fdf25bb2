import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { describeIssues } from '../../../platform/zod-issues.js';
import type { ModelCatalog } from '../../models/index.js';
import { modelTiers } from '../../models/index.js';

export const planKeys = ['free', 'pro', 'team', 'business'] as const;
export type PlanKey = (typeof planKeys)[number];

const MB = 1024 * 1024;
const GB = 1024 * MB;

export const planSchema = z.object({
  key: z.enum(planKeys),
  name: z.string().min(1),
  monthly_price_cents: z.number().int().nonnegative(),
  /** AI credit in USD per credit period (the lifetime of the workspace on free). */
  ai_credit: z.number().nonnegative(),
  max_documents: z.number().int().nonnegative(),
  max_storage_bytes: z.number().int().nonnegative(),
  max_file_size_bytes: z.number().int().nonnegative(),
  model_tiers: z.array(z.enum(modelTiers)).min(1),
  default_model: z.string().min(1),
});
export type Plan = z.output<typeof planSchema>;

export const builtInPlans: Record<PlanKey, Plan> = {
  free: {
    key: 'free',
    name: 'Free',
    monthly_price_cents: 0,
    ai_credit: 1,
    max_documents: 25,
    max_storage_bytes: 100 * MB,
    max_file_size_bytes: 10 * MB,
    model_tiers: ['fast'],
    default_model: 'gpt-4.1-mini',
  },
  pro: {
    key: 'pro',
    name: 'Pro',
    monthly_price_cents: 2000,
    ai_credit: 10,
    max_documents: 1000,
    max_storage_bytes: 5 * GB,
    max_file_size_bytes: 50 * MB,
    model_tiers: ['fast', 'standard'],
    default_model: 'gpt-4.1',
  },
  team: {
    key: 'team',
    name: 'Team',
    monthly_price_cents: 6000,
    ai_credit: 40,
    max_documents: 5000,
    max_storage_bytes: 25 * GB,
    max_file_size_bytes: 100 * MB,
    model_tiers: ['fast', 'standard', 'premium'],
    default_model: 'gpt-4.1',
  },
  business: {
    key: 'business',
    name: 'Business',
    monthly_price_cents: 20000,
    ai_credit: 150,
    max_documents: 25000,
    max_storage_bytes: 100 * GB,
    max_file_size_bytes: 500 * MB,
    model_tiers: ['fast', 'standard', 'premium'],
    default_model: 'claude-sonnet-4-5',
  },
};

/** PLANS_FILE: `{ "<key>": { ...fields to override } }` for any of the four plans. */
const plansFile = z.partialRecord(z.enum(planKeys), planSchema.omit({ key: true }).partial());

export type Plans = Record<PlanKey, Plan>;

/** Checks that every default model exists and belongs to one of the plan's tiers. */
export function validatePlans(plans: Plans, catalog: ModelCatalog): Plans {
  for (const plan of Object.values(plans)) {
    const model = catalog.chatModel(plan.default_model);
    if (!model) throw new Error(`plan ${plan.key}: default model ${plan.default_model} is not in the catalog`);
    if (!plan.model_tiers.includes(model.tier)) {
      throw new Error(`plan ${plan.key}: default model ${plan.default_model} (${model.tier}) is outside the plan's tiers`);
    }
  }
  return plans;
}

export function loadPlans(file: string | undefined, catalog: ModelCatalog): Plans {
  const plans: Plans = structuredClone(builtInPlans);
  if (file) {
    const parsed = plansFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) {
      throw new Error(`PLANS_FILE ${file} is invalid: ${describeIssues(parsed.error.issues)}`);
    }
    for (const [key, override] of Object.entries(parsed.data)) {
      const planKey = key as PlanKey;
      plans[planKey] = planSchema.parse({ ...plans[planKey], ...override, key: planKey });
    }
  }
  return validatePlans(plans, catalog);
}

export function planIncludesModel(plan: Plan, model: { tier: string }): boolean {
  return (plan.model_tiers as string[]).includes(model.tier);
}
