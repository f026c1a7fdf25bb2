import type { Db } from '../../db/client.js';
import { requireMember, type WorkspaceRow } from '../workspaces/index.js';
import type { ModelCatalog } from './catalog.js';
import type { z } from 'zod';
import type { aiModelOut } from './models.schemas.js';

/**
 * What a workspace's plan allows of the catalog: whether it includes a model (by tier) and its
 * default model. Billing answers it (that module sits above this one: its plans name the
 * catalog's tiers); wired in src/deps.ts. Listing models calls none, so no billing gate here.
 */
export type PlanModelRules = (workspace: WorkspaceRow) => Promise<{ includes: (model: { tier: string }) => boolean; defaultModel: string }>;

export function createModelsService({ db, catalog, planModelRules }: { db: Db; catalog: ModelCatalog; planModelRules: PlanModelRules }) {
  return {
    /** The whole chat catalog, marked with what the workspace's plan includes. */
    async listForWorkspace(userId: number, workspaceId: string): Promise<z.output<typeof aiModelOut>[]> {
      const { workspace } = await requireMember(db, workspaceId, userId);
      const plan = await planModelRules(workspace);
      return catalog.models.map((model) => ({
        id: model.id,
        label: model.label,
        provider: model.provider,
        tier: model.tier,
        included: plan.includes(model),
        is_default: model.id === plan.defaultModel,
        max_output_tokens: model.max_output_tokens,
        context_window: model.context_window,
        input_price_per_million: model.input_price_per_million,
        output_price_per_million: model.output_price_per_million,
        supports_images: model.supports_images,
        controls: model.controls,
      }));
    },
  };
}

export type ModelsService = ReturnType<typeof createModelsService>;
