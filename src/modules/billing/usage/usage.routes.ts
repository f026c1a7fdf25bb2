import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../../platform/auth.js';
import { toPage } from '../../../platform/pagination.js';
import { attachmentDisposition } from '../../../platform/storage/keys.js';
import { workspaceIdParams } from '../../workspaces/index.js';
import { usageOut, usageQuery } from './usage.schemas.js';
import type { UsageService } from './usage.service.js';

export const usageRoutes: FastifyPluginAsyncZod<{ usage: UsageService }> = async (app, { usage }) => {
  app.get(
    '/api/workspaces/:id/usage/',
    {
      schema: {
        tags: ['billing'],
        params: workspaceIdParams,
        querystring: usageQuery,
        // `format=csv` answers text/csv with the same groups (all of them) instead.
        response: { 200: z.union([usageOut, z.string()]) },
      },
    },
    async (request, reply) => {
      const { query } = request;
      const userId = currentUser(request).id;
      if (query.format === 'csv') {
        const { filename, body } = await usage.csv(userId, request.params.id, query);
        return reply.type('text/csv; charset=utf-8').header('content-disposition', attachmentDisposition(filename)).send(body);
      }
      const page = await usage.report(userId, request.params.id, query);
      return {
        ...toPage(request, query, page),
        group_by: query.group_by,
        from: page.from.toISOString(),
        to: page.to.toISOString(),
      };
    },
  );
};
