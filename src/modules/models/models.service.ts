import type { Db } from '../../db/client.js';
import type { Plans } from '../billing/index.js';
import { planIncludesModel } from '../billing/index.js';
import { resolveBillingState } from '../billing/index.js';
import { requireMember } from '../workspaces/index.js';
import type { ModelCatalog } from './catalog.js';
import type { z } from 'zod';
import type { aiModelOut } from './models.schemas.js';

export function createModelsService({ db, plans, catalog }: { db: Db; plans: Plans; catalog: ModelCatalog }) {
  return {
    /** The whole chat catalog, marked with what the workspace's plan includes. */
    async listForWorkspace(userId: number, workspaceId: string): Promise<z.output<typeof aiModelOut>[]> {
      const { workspace } = await requireMember(db, workspaceId, userId);
      const { plan } = await resolveBillingState(db, plans, workspace);
      return catalog.models.map((model) => ({
        id: model.id,
        label: model.label,
        provider: model.provider,
        tier: model.tier,
        included: planIncludesModel(plan, model),
        is_default: model.id === plan.default_model,
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
