import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../../test/support/app.js';
import { recordUsage, subscribe } from '../../../../test/support/billing.js';
import { addMember, newUser, newWorkspace } from '../../../../test/support/factories.js';
import { builtInPlans } from './plans.js';

const t = useTestApp();

async function team() {
  const owner = await newUser(t, { name: 'Olive Owner' });
  const admin = await newUser(t);
  const member = await newUser(t);
  const ws = await newWorkspace(t, owner);
  await addMember(t, ws, admin, 'admin');
  await addMember(t, ws, member, 'member');
  return { owner, admin, member, ws };
}

describe('GET plan/', () => {
  it('describes the free plan with the owner as billing contact', async () => {
    const { owner, ws } = await team();
    await recordUsage(t, ws.id, 0.25);
    const res = await t.get(`/api/workspaces/${ws.id}/plan/`, owner);
    expect(res.statusCode).toBe(200);
    const { default_model: _default, ...free } = builtInPlans.free;
    expect(res.json()).toEqual({
      plan: { ...free, default_model: 'gpt-4.1-mini' },
      interval: 'month',
      subscription: null,
      override: null,
      billing_contact: { id: owner.id, name: 'Olive Owner', email: owner.email },
      viewer: { can_manage_billing: true, is_billing_contact: true },
      usage: { documents: 0, storage_bytes: 0, credit_used: 0.25, credit_limit: 1, credit_renews_at: null },
    });
  });

  it('sets viewer flags per role', async () => {
    const { admin, member, ws } = await team();
    const asAdmin = (await t.get(`/api/workspaces/${ws.id}/plan/`, admin)).json();
    const asMember = (await t.get(`/api/workspaces/${ws.id}/plan/`, member)).json();
    expect(asAdmin.viewer).toEqual({ can_manage_billing: true, is_billing_contact: false });
    expect(asMember.viewer).toEqual({ can_manage_billing: false, is_billing_contact: false });
  });

  it('describes a paid subscription, paid for by an admin who becomes the billing contact', async () => {
    const { admin, member, ws } = await team();
    const now = new Date();
    const anchor = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 10, 8));
    const periodEnd = new Date(Date.now() + 10 * 86400_000);
    const cancelAt = new Date(Date.now() + 40 * 86400_000);
    await subscribe(t, ws.id, 'pro', { payer: admin, anchor, periodEnd, cancelAt, interval: 'year' });
    const body = (await t.get(`/api/workspaces/${ws.id}/plan/`, member)).json();
    expect(body.plan.key).toBe('pro');
    expect(body.interval).toBe('year');
    expect(body.subscription).toEqual({
      status: 'active',
      trial_end: null,
      period_end: periodEnd.toISOString(),
      cancel_at: cancelAt.toISOString(),
      cancel_at_period_end: false,
    });
    expect(body.billing_contact.id).toBe(admin.id);
    const renews = new Date(body.usage.credit_renews_at);
    expect(renews.getUTCDate()).toBe(10);
    expect(renews.getTime()).toBeGreaterThan(Date.now());
    expect(renews.getTime()).toBeLessThanOrEqual(Date.now() + 31 * 86400_000);
    expect((await t.get(`/api/workspaces/${ws.id}/plan/`, admin)).json().viewer.is_billing_contact).toBe(true);
  });

  it('reports the trial end as credit_renews_at while trialing', async () => {
    const { owner, ws } = await team();
    const trialEnd = new Date(Date.now() + 5 * 86400_000);
    await subscribe(t, ws.id, 'team', { payer: owner, status: 'trialing', trialStart: new Date(), trialEnd });
    const body = (await t.get(`/api/workspaces/${ws.id}/plan/`, owner)).json();
    expect(body.plan.key).toBe('team');
    expect(body.subscription.status).toBe('trialing');
    expect(body.subscription.trial_end).toBe(trialEnd.toISOString());
    expect(body.usage.credit_renews_at).toBe(trialEnd.toISOString());
  });

  it('keeps past_due access and drops canceled subscriptions back to free', async () => {
    const { owner, ws } = await team();
    await subscribe(t, ws.id, 'business', { payer: owner, status: 'past_due' });
    expect((await t.get(`/api/workspaces/${ws.id}/plan/`, owner)).json().plan.key).toBe('business');
    const other = await newWorkspace(t, owner, 'Other');
    await subscribe(t, other.id, 'business', { payer: owner, status: 'canceled' });
    const body = (await t.get(`/api/workspaces/${other.id}/plan/`, owner)).json();
    expect(body.plan.key).toBe('free');
    expect(body.subscription).toBeNull();
  });

  it('treats a product without a plan key as the free plan', async () => {
    const { owner, ws } = await team();
    await subscribe(t, ws.id, null, { payer: owner });
    const body = (await t.get(`/api/workspaces/${ws.id}/plan/`, owner)).json();
    expect(body.plan.key).toBe('free');
    expect(body.subscription.status).toBe('active');
    expect(body.usage.credit_renews_at).toBeNull();
  });

  it('answers 403 for non-members', async () => {
    const { ws } = await team();
    expect((await t.get(`/api/workspaces/${ws.id}/plan/`, await newUser(t))).statusCode).toBe(403);
  });
});

describe('GET credit-usage/', () => {
  it('reports limit, cost used and percentage for any member', async () => {
    const { member, ws } = await team();
    await recordUsage(t, ws.id, 0.125);
    const res = await t.get(`/api/workspaces/${ws.id}/credit-usage/`, member);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ credit_limit: 1, total_cost_used: 0.125, percentage_used: 12.5 });
  });
});
