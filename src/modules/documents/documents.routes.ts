import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import {
  chunkOut,
  documentOut,
  documentParams,
  downloadUrlOut,
  fromUrlBody,
  fromUrlOut,
  processingStatusOut,
  updateDocumentBody,
  uploadBody,
  uploadOut,
  workspaceParams,
} from './documents.schemas.js';
import type { DocumentsService } from './documents.service.js';

const tags = ['documents'];
const base = '/api/workspaces/:ws/documents';
const params = documentParams;

export const documentsRoutes: FastifyPluginAsyncZod<{ documents: DocumentsService }> = async (app, { documents }) => {
  app.get(
    `${base}/`,
    { schema: { tags, params: workspaceParams, querystring: pageQuery, response: { 200: paginated(documentOut) } } },
    async (request) => toPage(request, request.query, await documents.list(currentUser(request).id, request.params.ws, request.query)),
  );

  app.post(
    `${base}/upload/`,
    { schema: { tags, params: workspaceParams, body: uploadBody, response: { 201: uploadOut } }, config: { idempotent: true } },
    async (request, reply) => reply.code(201).send(await documents.upload(currentUser(request).id, request.params.ws, request.body)),
  );

  app.post(
    `${base}/from-url/`,
    { schema: { tags, params: workspaceParams, body: fromUrlBody, response: { 202: fromUrlOut } }, config: { idempotent: true } },
    async (request, reply) => reply.code(202).send(await documents.fromUrl(currentUser(request).id, request.params.ws, request.body)),
  );

  app.get(`${base}/:id/`, { schema: { tags, params, response: { 200: documentOut } } }, async (request) =>
    documents.get(currentUser(request).id, request.params.ws, request.params.id),
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: `${base}/:id/`,
      schema: { tags, params, body: updateDocumentBody, response: { 200: documentOut } },
      handler: async (request) => documents.update(currentUser(request).id, request.params.ws, request.params.id, request.body),
    });
  }

  app.delete(`${base}/:id/`, { schema: { tags, params, response: { 204: z.undefined() } } }, async (request, reply) => {
    await documents.delete(currentUser(request).id, request.params.ws, request.params.id);
    return reply.code(204).send();
  });

  app.post(
    `${base}/:id/confirm-upload/`,
    { schema: { tags, params, response: { 202: processingStatusOut } } },
    async (request, reply) => reply.code(202).send(await documents.confirmUpload(currentUser(request).id, request.params.ws, request.params.id)),
  );

  app.get(`${base}/:id/download-url/`, { schema: { tags, params, response: { 200: downloadUrlOut } } }, async (request) =>
    documents.downloadUrl(currentUser(request).id, request.params.ws, request.params.id),
  );

  app.get(`${base}/:id/processing-status/`, { schema: { tags, params, response: { 200: processingStatusOut } } }, async (request) =>
    documents.processingStatus(currentUser(request).id, request.params.ws, request.params.id),
  );

  app.post(
    `${base}/:id/reprocess/`,
    { schema: { tags, params, response: { 202: processingStatusOut } } },
    async (request, reply) => reply.code(202).send(await documents.reprocess(currentUser(request).id, request.params.ws, request.params.id)),
  );

  app.get(
    `${base}/:id/chunks/`,
    { schema: { tags, params, querystring: pageQuery, response: { 200: paginated(chunkOut) } } },
    async (request) =>
      toPage(request, request.query, await documents.chunks(currentUser(request).id, request.params.ws, request.params.id, request.query)),
  );
};
