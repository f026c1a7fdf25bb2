import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import {
  createWorkspaceBody,
  replaceWorkspaceBody,
  transferOwnershipBody,
  updateWorkspaceBody,
  workspaceIdParams,
  workspaceOut,
} from './workspaces.schemas.js';
import type { WorkspacesService } from './workspaces.service.js';

const tags = ['workspaces'];
const params = workspaceIdParams;

export const workspacesRoutes: FastifyPluginAsyncZod<{ workspaces: WorkspacesService }> = async (app, { workspaces }) => {
  app.get(
    '/api/workspaces/',
    { schema: { tags, querystring: pageQuery, response: { 200: paginated(workspaceOut) } } },
    async (request) => toPage(request, request.query, await workspaces.list(currentUser(request).id, request.query)),
  );

  app.post(
    '/api/workspaces/',
    { schema: { tags, body: createWorkspaceBody, response: { 201: workspaceOut } } },
    async (request, reply) => reply.code(201).send(await workspaces.create(currentUser(request).id, request.body.name)),
  );

  app.get('/api/workspaces/:id/', { schema: { tags, params, response: { 200: workspaceOut } } }, async (request) =>
    workspaces.get(currentUser(request).id, request.params.id),
  );

  app.patch(
    '/api/workspaces/:id/',
    { schema: { tags, params, body: updateWorkspaceBody, response: { 200: workspaceOut } } },
    async (request) => workspaces.update(currentUser(request).id, request.params.id, request.body),
  );

  app.put(
    '/api/workspaces/:id/',
    { schema: { tags, params, body: replaceWorkspaceBody, response: { 200: workspaceOut } } },
    async (request) => workspaces.update(currentUser(request).id, request.params.id, request.body),
  );

  app.delete(
    '/api/workspaces/:id/',
    { schema: { tags, params, response: { 204: z.undefined() } } },
    async (request, reply) => {
      await workspaces.delete(currentUser(request).id, request.params.id);
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/workspaces/:id/transfer-ownership/',
    { schema: { tags, params, body: transferOwnershipBody, response: { 200: workspaceOut } } },
    async (request) => workspaces.transferOwnership(currentUser(request).id, request.params.id, request.body.user),
  );

  app.post(
    '/api/workspaces/:id/leave/',
    { schema: { tags, params, response: { 204: z.undefined() } } },
    async (request, reply) => {
      await workspaces.leave(currentUser(request).id, request.params.id);
      return reply.code(204).send();
    },
  );
};
