import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import { documentOut } from '../documents/index.js';
import {
  chatKbParams,
  createKbBody,
  documentIdsBody,
  grantTeamAccessBody,
  kbIdsBody,
  kbOut,
  kbParams,
  revokeTeamAccessBody,
  teamAccessOut,
  updateKbBody,
} from './knowledge-bases.schemas.js';
import type { KnowledgeBasesService } from './knowledge-bases.service.js';

const tags = ['knowledge-bases'];
const wsParams = z.object({ ws: kbParams.shape.ws });
const base = '/api/workspaces/:ws/knowledge-bases';

export const knowledgeBasesRoutes: FastifyPluginAsyncZod<{ kbs: KnowledgeBasesService }> = async (app, { kbs }) => {
  app.get(`${base}/`, { schema: { tags, params: wsParams, querystring: pageQuery, response: { 200: paginated(kbOut) } } }, async (request) =>
    toPage(request, request.query, await kbs.list(currentUser(request).id, request.params.ws, request.query)),
  );

  app.post(`${base}/`, { schema: { tags, params: wsParams, body: createKbBody, response: { 201: kbOut } } }, async (request, reply) =>
    reply.code(201).send(await kbs.create(currentUser(request).id, request.params.ws, request.body)),
  );

  app.get(`${base}/:id/`, { schema: { tags, params: kbParams, response: { 200: kbOut } } }, async (request) =>
    kbs.get(currentUser(request).id, request.params.ws, request.params.id),
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: `${base}/:id/`,
      schema: { tags, params: kbParams, body: updateKbBody, response: { 200: kbOut } },
      handler: async (request) => kbs.update(currentUser(request).id, request.params.ws, request.params.id, request.body),
    });
  }

  app.delete(`${base}/:id/`, { schema: { tags, params: kbParams, response: { 204: z.undefined() } } }, async (request, reply) => {
    await kbs.delete(currentUser(request).id, request.params.ws, request.params.id);
    return reply.code(204).send();
  });

  app.post(
    `${base}/:id/add-documents/`,
    { schema: { tags, params: kbParams, body: documentIdsBody, response: { 200: kbOut } } },
    async (request) => kbs.addDocuments(currentUser(request).id, request.params.ws, request.params.id, request.body.document_ids),
  );

  app.post(
    `${base}/:id/remove-documents/`,
    { schema: { tags, params: kbParams, body: documentIdsBody, response: { 200: kbOut } } },
    async (request) => kbs.removeDocuments(currentUser(request).id, request.params.ws, request.params.id, request.body.document_ids),
  );

  app.get(
    `${base}/:id/documents/`,
    { schema: { tags, params: kbParams, querystring: pageQuery, response: { 200: paginated(documentOut) } } },
    async (request) =>
      toPage(request, request.query, await kbs.listDocuments(currentUser(request).id, request.params.ws, request.params.id, request.query)),
  );

  app.get(
    `${base}/:id/team-access/`,
    { schema: { tags, params: kbParams, response: { 200: z.array(teamAccessOut) } } },
    async (request) => kbs.listTeamAccess(currentUser(request).id, request.params.ws, request.params.id),
  );

  app.post(
    `${base}/:id/team-access/`,
    { schema: { tags, params: kbParams, body: grantTeamAccessBody, response: { 200: z.array(teamAccessOut) } } },
    async (request) =>
      kbs.grantTeamAccess(currentUser(request).id, request.params.ws, request.params.id, request.body.team, request.body.permission),
  );

  app.delete(
    `${base}/:id/team-access/`,
    { schema: { tags, params: kbParams, body: revokeTeamAccessBody, response: { 204: z.undefined() } } },
    async (request, reply) => {
      await kbs.revokeTeamAccess(currentUser(request).id, request.params.ws, request.params.id, request.body.team);
      return reply.code(204).send();
    },
  );

  const chatBase = '/api/workspaces/:ws/chats/:session/knowledge-bases';
  app.get(`${chatBase}/`, { schema: { tags, params: chatKbParams, response: { 200: z.array(kbOut) } } }, async (request) =>
    kbs.listForChat(currentUser(request).id, request.params.ws, request.params.session),
  );
  app.post(
    `${chatBase}/attach/`,
    { schema: { tags, params: chatKbParams, body: kbIdsBody, response: { 200: z.array(kbOut) } } },
    async (request) => kbs.attach(currentUser(request).id, request.params.ws, request.params.session, request.body.knowledge_base_ids),
  );
  app.post(
    `${chatBase}/detach/`,
    { schema: { tags, params: chatKbParams, body: kbIdsBody, response: { 200: z.array(kbOut) } } },
    async (request) => kbs.detach(currentUser(request).id, request.params.ws, request.params.session, request.body.knowledge_base_ids),
  );
};
