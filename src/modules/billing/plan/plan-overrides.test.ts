import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../../test/support/app.js';
import { recordUsage, subscribe } from '../../../../test/support/billing.js';
import { addMember, newUser, newWorkspace } from '../../../../test/support/factories.js';
import { planOverrides } from '../billing.table.js';

const t = useTestApp();

async function setup() {
  const owner = await newUser(t);
  const member = await newUser(t);
  const ws = await newWorkspace(t, owner);
  await addMember(t, ws, member, 'member');
  return { owner, member, ws };
}

const overrides = () => t.deps.services.planOverrides;

describe('plan overrides', () => {
  it('grant a plan without a subscription: the plan endpoint shows it and the plan’s limits apply', async () => {
    const { member, ws } = await setup();
    const chats = `/api/workspaces/${ws.id}/chats/`;
    // Free plan: a standard-tier model is refused.
    expect((await t.post(chats, { name: 'x', ai_model: 'claude-sonnet-4-5' }, member)).statusCode).toBe(402);

    const until = new Date(Date.now() + 10 * 86400_000);
    const view = await overrides().set(ws.id, { plan: 'pro', endsAt: until, reason: 'design partner', createdBy: 'ops' });
    expect(view).toMatchObject({ plan: 'pro', ends_at: until.toISOString(), reason: 'design partner', created_by: 'ops' });

    const plan = (await t.get(`/api/workspaces/${ws.id}/plan/`, member)).json();
    expect(plan.plan.key).toBe('pro');
    expect(plan.subscription).toBeNull();
    expect(plan.override).toEqual({ plan: 'pro', ends_at: until.toISOString(), reason: 'design partner' });
    expect(plan.usage.credit_limit).toBe(10);
    // Monthly credit, anchored when the override was set.
    const renews = new Date(plan.usage.credit_renews_at).getTime();
    expect(renews).toBeGreaterThan(Date.now() + 27 * 86400_000);
    expect(renews).toBeLessThanOrEqual(Date.now() + 31 * 86400_000);

    const created = await t.post(chats, { name: 'x', ai_model: 'claude-sonnet-4-5' }, member);
    expect(created.statusCode, created.body).toBe(201);
  });

  it('an expired override is ignored', async () => {
    const { member, ws } = await setup();
    await overrides().set(ws.id, { plan: 'business', endsAt: new Date(Date.now() + 60_000) });
    await t.deps.database.db
      .update(planOverrides)
      .set({ endsAt: new Date(Date.now() - 1000) })
      .where(eq(planOverrides.workspaceId, ws.id));
    const plan = (await t.get(`/api/workspaces/${ws.id}/plan/`, member)).json();
    expect(plan.plan.key).toBe('free');
    expect(plan.override).toBeNull();
    expect(plan.usage.credit_limit).toBe(1);
    expect((await t.post(`/api/workspaces/${ws.id}/chats/`, { name: 'x', ai_model: 'o3' }, member)).json().code).toBe(
      'model_not_in_plan',
    );
    // Still stored, for the operator to see or clear.
    expect((await overrides().get(ws.id))?.plan).toBe('business');
  });

  it('wins over a subscription’s plan and keeps the subscription’s credit period', async () => {
    const { owner, member, ws } = await setup();
    const anchor = new Date(Date.UTC(2026, 0, 10, 8));
    await subscribe(t, ws.id, 'pro', { payer: owner, anchor });
    await overrides().set(ws.id, { plan: 'team', reason: 'upgrade while the invoice is sorted' });
    const plan = (await t.get(`/api/workspaces/${ws.id}/plan/`, member)).json();
    expect(plan.plan.key).toBe('team');
    expect(plan.subscription.status).toBe('active');
    expect(plan.override).toEqual({ plan: 'team', ends_at: null, reason: 'upgrade while the invoice is sorted' });
    expect(plan.usage.credit_limit).toBe(40);
    expect(new Date(plan.usage.credit_renews_at).getUTCDate()).toBe(10);
  });

  it('a downgrade to free over a paid subscription: the free credit, over the subscription’s month', async () => {
    const { owner, member, ws } = await setup();
    await subscribe(t, ws.id, 'pro', { payer: owner, anchor: new Date(Date.now() - 100 * 86400_000) });
    await recordUsage(t, ws.id, 2, new Date(Date.now() - 90 * 86400_000));
    await recordUsage(t, ws.id, 1.5);
    await overrides().set(ws.id, { plan: 'free' });
    const credit = (await t.get(`/api/workspaces/${ws.id}/credit-usage/`, member)).json();
    expect(credit).toEqual({ credit_limit: 1, total_cost_used: 1.5, percentage_used: 150 });
  });

  it('clear removes it; unknown plans, past ends and unknown workspaces are refused', async () => {
    const { member, ws } = await setup();
    await overrides().set(ws.id, { plan: 'pro' });
    await overrides().clear(ws.id);
    expect((await t.get(`/api/workspaces/${ws.id}/plan/`, member)).json()).toMatchObject({ plan: { key: 'free' }, override: null });
    await expect(overrides().clear(ws.id)).rejects.toMatchObject({ status: 404, code: 'no_plan_override' });
    await expect(overrides().set(ws.id, { plan: 'platinum' })).rejects.toMatchObject({ status: 400, code: 'unknown_plan' });
    await expect(overrides().set(ws.id, { plan: 'pro', endsAt: new Date(Date.now() - 1000) })).rejects.toMatchObject({ status: 400 });
    await expect(overrides().set('0190f7a0-0000-7000-8000-000000000000', { plan: 'pro' })).rejects.toMatchObject({
      status: 404,
      code: 'workspace_not_found',
    });
  });
});
