import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import { apiKeyOut, apiKeyParams, createApiKeyBody, createdApiKeyOut } from './api-keys.schemas.js';
import type { ApiKeysService } from './api-keys.service.js';

const tags = ['auth'];

/** Personal API keys of the signed-in user (a request made with an API key is refused: 403 api_key_not_allowed). */
export const apiKeysRoutes: FastifyPluginAsyncZod<{ apiKeys: ApiKeysService }> = async (app, { apiKeys }) => {
  app.post(
    '/auth/api-keys/',
    {
      schema: {
        tags,
        body: createApiKeyBody,
        response: { 201: createdApiKeyOut },
      },
    },
    async (request, reply) => reply.code(201).send(await apiKeys.create(currentUser(request), request.body)),
  );

  app.get(
    '/auth/api-keys/',
    { schema: { tags, querystring: pageQuery, response: { 200: paginated(apiKeyOut) } } },
    async (request) => toPage(request, request.query, await apiKeys.list(currentUser(request), request.query)),
  );

  app.delete(
    '/auth/api-keys/:id/',
    { schema: { tags, params: apiKeyParams, response: { 204: z.undefined() } } },
    async (request, reply) => {
      await apiKeys.revoke(currentUser(request), request.params.id);
      return reply.code(204).send();
    },
  );
};
