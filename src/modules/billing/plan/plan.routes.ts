import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { currentUser } from '../../../platform/auth.js';
import { workspaceIdParams } from '../../workspaces/index.js';
import { creditUsageOut, planOut } from './plan.schemas.js';
import type { PlanService } from './plan.service.js';

const tags = ['billing'];
const params = workspaceIdParams;

export const planRoutes: FastifyPluginAsyncZod<{ planService: PlanService }> = async (app, { planService }) => {
  app.get(
    '/api/workspaces/:id/credit-usage/',
    { schema: { tags, params, response: { 200: creditUsageOut } } },
    async (request) => planService.creditUsage(currentUser(request).id, request.params.id),
  );

  app.get('/api/workspaces/:id/plan/', { schema: { tags, params, response: { 200: planOut } } }, async (request) =>
    planService.plan(currentUser(request).id, request.params.id),
  );
};
