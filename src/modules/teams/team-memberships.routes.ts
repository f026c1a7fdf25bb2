import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import type { TeamMembershipsService } from './team-memberships.service.js';
import {
  changeTeamRoleBody,
  teamMembershipIdParams,
  teamMembershipListQuery,
  teamMembershipOut,
} from './teams.schemas.js';

const tags = ['team memberships'];
const params = teamMembershipIdParams;

/** Team memberships are read and changed here; they are created only by accepting a team invitation. */
export const teamMembershipsRoutes: FastifyPluginAsyncZod<{ teamMemberships: TeamMembershipsService }> = async (
  app,
  { teamMemberships },
) => {
  const listQuery = pageQuery.extend(teamMembershipListQuery.shape);

  app.get(
    '/api/teammemberships/',
    {
      schema: {
        tags,
        querystring: listQuery,
        response: { 200: paginated(teamMembershipOut) },
      },
    },
    async (request) =>
      toPage(request, request.query, await teamMemberships.list(currentUser(request).id, request.query)),
  );

  app.get(
    '/api/teammemberships/mine/',
    { schema: { tags, response: { 200: z.array(teamMembershipOut) } } },
    async (request) => teamMemberships.mine(currentUser(request).id),
  );

  app.get(
    '/api/teammemberships/:id/',
    { schema: { tags, params, response: { 200: teamMembershipOut } } },
    async (request) => teamMemberships.get(currentUser(request).id, request.params.id),
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/teammemberships/:id/',
      schema: {
        tags,
        params,
        body: changeTeamRoleBody,
        response: { 200: teamMembershipOut },
      },
      handler: async (request) =>
        teamMemberships.changeRole(currentUser(request).id, request.params.id, request.body.role),
    });
  }

  app.delete(
    '/api/teammemberships/:id/',
    {
      schema: {
        tags,
        params,
        response: { 204: z.undefined() },
      },
    },
    async (request, reply) => {
      await teamMemberships.remove(currentUser(request).id, request.params.id);
      return reply.code(204).send();
    },
  );
};
