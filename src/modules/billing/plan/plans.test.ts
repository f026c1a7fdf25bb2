import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCatalog } from '../../models/catalog.js';
import { builtInPlans, loadPlans, planIncludesModel } from './plans.js';
import { addMonths, creditMonth } from './billing-state.js';

const catalog = createCatalog();
const write = (content: unknown) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'plans-')), 'plans.json');
  writeFileSync(file, JSON.stringify(content));
  return file;
};

describe('plans', () => {
  it('ships four valid plans whose default model is in their tiers', () => {
    const plans = loadPlans(undefined, catalog);
    expect(Object.keys(plans)).toEqual(['free', 'pro', 'team', 'business']);
    for (const plan of Object.values(plans)) {
      expect(planIncludesModel(plan, catalog.chatModel(plan.default_model)!)).toBe(true);
    }
    expect(plans.free.model_tiers).toEqual(['fast']);
    expect(plans.free.monthly_price_cents).toBe(0);
  });

  it('takes overrides from PLANS_FILE', () => {
    const plans = loadPlans(write({ pro: { ai_credit: 25, max_documents: 3 } }), catalog);
    expect(plans.pro).toMatchObject({ ai_credit: 25, max_documents: 3, name: 'Pro' });
    expect(plans.team).toEqual(builtInPlans.team);
  });

  it('refuses a default model outside the plan tiers or unknown', () => {
    expect(() => loadPlans(write({ free: { default_model: 'o3' } }), catalog)).toThrow(/outside the plan's tiers/);
    expect(() => loadPlans(write({ free: { default_model: 'nope' } }), catalog)).toThrow(/not in the catalog/);
    expect(() => loadPlans(write({ gold: {} }), catalog)).toThrow(/PLANS_FILE/);
  });
});

describe('credit months', () => {
  it('adds months clamping the day like the provider', () => {
    expect(addMonths(new Date('2026-01-31T10:00:00Z'), 1).toISOString()).toBe('2026-02-28T10:00:00.000Z');
    expect(addMonths(new Date('2028-01-31T10:00:00Z'), 1).toISOString()).toBe('2028-02-29T10:00:00.000Z');
    expect(addMonths(new Date('2026-03-15T00:00:00Z'), 10).toISOString()).toBe('2027-01-15T00:00:00.000Z');
  });

  it('finds the credit month containing now from the anchor', () => {
    const anchor = new Date('2026-01-15T12:00:00Z');
    expect(creditMonth(anchor, new Date('2026-03-20T00:00:00Z'))).toEqual({
      start: new Date('2026-03-15T12:00:00Z'),
      end: new Date('2026-04-15T12:00:00Z'),
    });
    expect(creditMonth(anchor, new Date('2026-03-15T11:59:59Z')).start).toEqual(new Date('2026-02-15T12:00:00Z'));
    expect(creditMonth(anchor, new Date('2026-03-15T12:00:00Z')).start).toEqual(new Date('2026-03-15T12:00:00Z'));
  });
});
