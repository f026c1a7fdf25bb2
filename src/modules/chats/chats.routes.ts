import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import { plainResponse } from '../../platform/serializer.js';
import {
  chatOut,
  chatParams,
  createChatBody,
  publicChatOut,
  shareBody,
  sharedLinkParams,
  shareOut,
  togglePublicOut,
  updateChatBody,
  workspaceParams,
} from './chats.schemas.js';
import type { ChatsService } from './chats.service.js';

const tags = ['chats'];

export const chatsRoutes: FastifyPluginAsyncZod<{ chats: ChatsService }> = async (app, { chats }) => {
  app.get(
    '/api/workspaces/:ws/chats/',
    // The hot list: serialised from its JSON Schema (a plain schema; platform/serializer.ts).
    { schema: { tags, params: workspaceParams, querystring: pageQuery, response: { 200: plainResponse(paginated(chatOut)) } } },
    async (request) =>
      toPage(request, request.query, await chats.list(currentUser(request).id, request.params.ws, request.query)),
  );

  app.post(
    '/api/workspaces/:ws/chats/',
    { schema: { tags, params: workspaceParams, body: createChatBody, response: { 201: chatOut } } },
    async (request, reply) =>
      reply.code(201).send(await chats.create(currentUser(request).id, request.params.ws, request.body)),
  );

  app.get('/api/workspaces/:ws/chats/:id/', { schema: { tags, params: chatParams, response: { 200: chatOut } } }, async (request) =>
    chats.get(currentUser(request).id, request.params.ws, request.params.id),
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/api/workspaces/:ws/chats/:id/',
      schema: { tags, params: chatParams, body: updateChatBody, response: { 200: chatOut } },
      handler: async (request) => chats.update(currentUser(request).id, request.params.ws, request.params.id, request.body),
    });
  }

  app.delete(
    '/api/workspaces/:ws/chats/:id/',
    { schema: { tags, params: chatParams, response: { 204: z.undefined() } } },
    async (request, reply) => {
      await chats.delete(currentUser(request).id, request.params.ws, request.params.id);
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/workspaces/:ws/chats/:id/toggle-public/',
    { schema: { tags, params: chatParams, response: { 200: togglePublicOut } } },
    async (request) => chats.togglePublic(currentUser(request).id, request.params.ws, request.params.id),
  );

  app.post(
    '/api/workspaces/:ws/chats/:id/share/',
    { schema: { tags, params: chatParams, body: shareBody, response: { 200: shareOut, 201: shareOut } } },
    async (request, reply) => {
      const { share, created } = await chats.share(
        currentUser(request).id,
        request.params.ws,
        request.params.id,
        request.body.email,
      );
      return reply.code(created ? 201 : 200).send(share);
    },
  );

  app.post(
    '/api/workspaces/:ws/chats/:id/revoke-share/',
    { schema: { tags, params: chatParams, body: shareBody, response: { 204: z.undefined() } } },
    async (request, reply) => {
      await chats.revokeShare(currentUser(request).id, request.params.ws, request.params.id, request.body.email);
      return reply.code(204).send();
    },
  );

  app.get(
    '/api/workspaces/:ws/chats/:id/shares/',
    { schema: { tags, params: chatParams, querystring: pageQuery, response: { 200: paginated(shareOut) } } },
    async (request) =>
      toPage(
        request,
        request.query,
        await chats.listShares(currentUser(request).id, request.params.ws, request.params.id, request.query),
      ),
  );

  app.get(
    '/api/chats/shared/:link_uuid/',
    {
      config: { auth: 'optional' },
      schema: { tags, params: sharedLinkParams, response: { 200: publicChatOut } },
    },
    async (request) => chats.sharedView(request.user?.id ?? null, request.params.link_uuid),
  );
};
