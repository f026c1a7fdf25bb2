import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { aiModelOut } from './models.schemas.js';

namedSchema(aiModelOut, 'AiModel', {
  description: 'A chat model of the catalog, whether the workspace plan includes it, and the settings it accepts.',
  example: {
    id: 'gpt-4o-mini',
    label: 'GPT-4o mini',
    provider: 'openai',
    tier: 'fast',
    included: true,
    is_default: true,
    max_output_tokens: 16384,
    context_window: 128000,
    input_price_per_million: 0.15,
    output_price_per_million: 0.6,
    supports_images: true,
    controls: {
      temperature: { max: 2 },
      top_p: true,
      top_k: false,
      penalties: true,
      seed: true,
      stop: 'stop',
      reasoning_effort: [],
      thinking: false,
      temperature_or_top_p: false,
    },
  },
});

export const modelsDocs: OperationDocs = {
  'GET /api/workspaces/:id/ai-models/': {
    operationId: 'models_list',
    summary: 'List the AI models of a workspace',
    description: 'Any member of the workspace: every chat model of the catalog, with `included` for the ones its plan allows.',
    errors: { 403: ['not_workspace_member'] },
  },
};
