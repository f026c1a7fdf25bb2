import { accessTags, type CacheInvalidator } from '../../../platform/cache/shared-cache.js';
import type { Db } from '../../../db/client.js';
import { fieldError, NotFoundError } from '../../../platform/errors.js';
import { findWorkspace } from '../../workspaces/index.js';
import * as repo from '../billing.repo.js';
import { planKeys, type Plans } from './plans.js';

/** An override as operators and the plan endpoint see it. */
export interface PlanOverrideView {
  plan: string;
  ends_at: string | null;
  reason: string;
  created_by: string;
  created_at: string;
}

export function toOverrideView(row: repo.PlanOverrideRow): PlanOverrideView {
  return {
    plan: row.plan,
    ends_at: row.endsAt ? row.endsAt.toISOString() : null,
    reason: row.reason,
    created_by: row.createdBy,
    created_at: row.createdAt.toISOString(),
  };
}

/**
 * Plans granted by an operator without the payment provider (the admin CLI). An override wins over
 * the subscription's plan while it is in force (see `resolveBillingState`); one whose end has
 * passed is ignored, and stays in the table until it is cleared or replaced.
 */
export function createPlanOverridesService({ db, plans, invalidate }: { db: Db; plans: Plans; invalidate?: CacheInvalidator }) {
  async function requireWorkspace(workspaceId: string) {
    const workspace = await findWorkspace(db, workspaceId);
    if (!workspace) throw new NotFoundError(`No workspace with id ${workspaceId}.`, 'workspace_not_found');
    return workspace;
  }

  return {
    async set(
      workspaceId: string,
      input: { plan: string; endsAt?: Date | null; reason?: string; createdBy?: string },
      now = new Date(),
    ): Promise<PlanOverrideView> {
      if (!(planKeys as readonly string[]).includes(input.plan) || !(input.plan in plans)) {
        throw fieldError('plan', `Unknown plan "${input.plan}"; known plans: ${planKeys.join(', ')}.`, 'unknown_plan');
      }
      const endsAt = input.endsAt ?? null;
      if (endsAt && (Number.isNaN(endsAt.getTime()) || endsAt <= now)) {
        throw fieldError('ends_at', 'The end of an override must be a valid date in the future.');
      }
      await requireWorkspace(workspaceId);
      const row = await repo.upsertPlanOverride(db, {
        workspaceId,
        plan: input.plan,
        endsAt,
        reason: (input.reason ?? '').slice(0, 500),
        createdBy: (input.createdBy ?? '').slice(0, 200),
      });
      await invalidate?.(accessTags.billingOf(workspaceId));
      return toOverrideView(row);
    },

    /** Removes the override; 404 `no_plan_override` when the workspace has none. */
    async clear(workspaceId: string): Promise<void> {
      await requireWorkspace(workspaceId);
      if (!(await repo.deletePlanOverride(db, workspaceId))) {
        throw new NotFoundError('This workspace has no plan override.', 'no_plan_override');
      }
      await invalidate?.(accessTags.billingOf(workspaceId));
    },

    /** The stored override (in force or expired), or null. */
    async get(workspaceId: string): Promise<PlanOverrideView | null> {
      const row = await repo.findPlanOverride(db, workspaceId);
      return row ? toOverrideView(row) : null;
    },
  };
}

export type PlanOverridesService = ReturnType<typeof createPlanOverridesService>;
