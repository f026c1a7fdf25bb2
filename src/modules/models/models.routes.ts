import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { workspaceIdParams } from '../workspaces/index.js';
import { aiModelOut } from './models.schemas.js';
import type { ModelsService } from './models.service.js';

export const modelsRoutes: FastifyPluginAsyncZod<{ models: ModelsService }> = async (app, { models }) => {
  app.get(
    '/api/workspaces/:id/ai-models/',
    { schema: { tags: ['models'], params: workspaceIdParams, response: { 200: z.array(aiModelOut) } } },
    async (request) => models.listForWorkspace(currentUser(request).id, request.params.id),
  );
};
