import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import {
  createTeamBody,
  replaceTeamBody,
  teamIdParams,
  teamListQuery,
  teamOut,
  updateTeamBody,
} from './teams.schemas.js';
import type { TeamsService } from './teams.service.js';

const tags = ['teams'];
const params = teamIdParams;

export const teamsRoutes: FastifyPluginAsyncZod<{ teams: TeamsService }> = async (app, { teams }) => {
  const listQuery = pageQuery.extend(teamListQuery.shape);

  app.get(
    '/api/teams/',
    {
      schema: {
        tags,
        querystring: listQuery,
        response: { 200: paginated(teamOut) },
      },
    },
    async (request) => toPage(request, request.query, await teams.list(currentUser(request).id, request.query)),
  );

  app.post(
    '/api/teams/',
    {
      schema: {
        tags,
        body: createTeamBody,
        response: { 201: teamOut },
      },
    },
    async (request, reply) => reply.code(201).send(await teams.create(currentUser(request).id, request.body)),
  );

  app.get('/api/teams/:id/', { schema: { tags, params, response: { 200: teamOut } } }, async (request) =>
    teams.get(currentUser(request).id, request.params.id),
  );

  app.put(
    '/api/teams/:id/',
    { schema: { tags, params, body: replaceTeamBody, response: { 200: teamOut } } },
    async (request) => teams.update(currentUser(request).id, request.params.id, request.body),
  );

  app.patch(
    '/api/teams/:id/',
    { schema: { tags, params, body: updateTeamBody, response: { 200: teamOut } } },
    async (request) => teams.update(currentUser(request).id, request.params.id, request.body),
  );

  app.delete(
    '/api/teams/:id/',
    {
      schema: {
        tags,
        params,
        response: { 204: z.undefined() },
      },
    },
    async (request, reply) => {
      await teams.delete(currentUser(request).id, request.params.id);
      return reply.code(204).send();
    },
  );
};
