import type { Db } from '../../../db/client.js';
import { requireMember } from '../../workspaces/index.js';
import { isOwnerOrAdmin } from '../../workspaces/index.js';
import { findUserSummary } from '../../users/index.js';
import type { CreditService, CreditSummary } from '../credit/credit.service.js';
import type { PlanOut } from './plan.schemas.js';
import type { Plans } from './plans.js';
import { resolveBillingState } from './billing-state.js';

/** Documents and bytes stored by a workspace (the documents module provides it). */
export type DocumentUsage = (workspaceId: string) => Promise<{ documents: number; storageBytes: number }>;

const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

export function createPlanService(deps: { db: Db; plans: Plans; credit: CreditService; documentUsage: DocumentUsage }) {
  const { db, plans, credit, documentUsage } = deps;
  return {
    async creditUsage(userId: number, workspaceId: string): Promise<CreditSummary> {
      const { workspace } = await requireMember(db, workspaceId, userId);
      return credit.summary(workspace);
    },

    /** Plan, override, subscription status and this period's credit of any workspace, for operators. */
    async overview(workspace: { id: string; ownerId: number }) {
      const state = await resolveBillingState(db, plans, workspace);
      const summary = await credit.summary(workspace);
      return {
        plan: state.plan.key,
        override: state.override ? { plan: state.override.plan, endsAt: state.override.endsAt, reason: state.override.reason } : null,
        subscriptionStatus: state.subscription?.status ?? null,
        creditUsed: summary.total_cost_used,
        creditLimit: summary.credit_limit,
        periodStart: state.periodStart,
        renewsAt: state.renewsAt,
      };
    },

    async plan(userId: number, workspaceId: string): Promise<PlanOut> {
      const access = await requireMember(db, workspaceId, userId);
      const state = await resolveBillingState(db, plans, access.workspace);
      const [contact, docs, summary] = await Promise.all([
        findUserSummary(db, state.billingContactId),
        documentUsage(workspaceId),
        credit.summary(access.workspace),
      ]);
      const sub = state.subscription;
      const { default_model, ...limits } = state.plan;
      return {
        plan: { ...limits, default_model },
        interval: state.interval,
        subscription: sub
          ? {
              status: sub.status,
              trial_end: iso(sub.trialEnd),
              period_end: iso(sub.currentPeriodEnd),
              cancel_at: iso(sub.cancelAt),
              cancel_at_period_end: sub.cancelAtPeriodEnd,
            }
          : null,
        override: state.override
          ? { plan: state.plan.key, ends_at: iso(state.override.endsAt), reason: state.override.reason }
          : null,
        billing_contact: contact ?? { id: state.billingContactId, name: '', email: '' },
        viewer: {
          can_manage_billing: isOwnerOrAdmin(access),
          is_billing_contact: state.billingContactId === userId,
        },
        usage: {
          documents: docs.documents,
          storage_bytes: docs.storageBytes,
          credit_used: summary.total_cost_used,
          credit_limit: summary.credit_limit,
          credit_renews_at: iso(state.renewsAt),
        },
      };
    },
  };
}

export type PlanService = ReturnType<typeof createPlanService>;
