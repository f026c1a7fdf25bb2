import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import type { MembershipsService } from './memberships.service.js';
import { changeRoleBody, membershipIdParams, membershipListQuery, membershipOut } from './workspaces.schemas.js';

const tags = ['memberships'];
const params = membershipIdParams;

/** Memberships are read and changed here; they are created only by accepting an invitation. */
export const membershipsRoutes: FastifyPluginAsyncZod<{ memberships: MembershipsService }> = async (
  app,
  { memberships },
) => {
  const listQuery = pageQuery.extend(membershipListQuery.shape);

  app.get(
    '/api/workspacememberships/',
    { schema: { tags, querystring: listQuery, response: { 200: paginated(membershipOut) } } },
    async (request) => toPage(request, request.query, await memberships.list(currentUser(request).id, request.query)),
  );

  app.get('/api/workspacememberships/mine/', { schema: { tags, response: { 200: z.array(membershipOut) } } }, async (request) =>
    memberships.mine(currentUser(request).id),
  );

  app.get(
    '/api/workspacememberships/:id/',
    { schema: { tags, params, response: { 200: membershipOut } } },
    async (request) => memberships.get(currentUser(request).id, request.params.id),
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/workspacememberships/:id/',
      schema: { tags, params, body: changeRoleBody, response: { 200: membershipOut } },
      handler: async (request) => memberships.changeRole(currentUser(request).id, request.params.id, request.body.role),
    });
  }

  app.delete(
    '/api/workspacememberships/:id/',
    { schema: { tags, params, response: { 204: z.undefined() } } },
    async (request, reply) => {
      await memberships.remove(currentUser(request).id, request.params.id);
      return reply.code(204).send();
    },
  );
};
