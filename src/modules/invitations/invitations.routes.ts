import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import {
  answerInvitationBody,
  createInvitationBody,
  invitationIdParams,
  invitationListQuery,
  invitationOut,
  scopedInvitationParams,
} from './invitations.schemas.js';
import type { InvitationsService } from './invitations.service.js';

const tags = ['invitations'];
const noContent = { 204: z.undefined() };

/** Invitations are the only way into a workspace or a team. */
export const invitationsRoutes: FastifyPluginAsyncZod<{ invitations: InvitationsService }> = async (
  app,
  { invitations },
) => {
  const listQuery = pageQuery.extend(invitationListQuery.shape);
  const targetParams = invitationIdParams;

  // --- workspace invitations ---
  app.post(
    '/api/workspaces/:id/invitations/',
    {
      schema: {
        tags,
        params: targetParams,
        body: createInvitationBody,
        response: { 201: invitationOut },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await invitations.inviteToWorkspace(currentUser(request), request.params.id, request.body)),
  );

  app.get(
    '/api/workspaces/:id/invitations/',
    {
      schema: {
        tags,
        params: targetParams,
        querystring: listQuery,
        response: { 200: paginated(invitationOut) },
      },
    },
    async (request) =>
      toPage(
        request,
        request.query,
        await invitations.listForWorkspace(currentUser(request).id, request.params.id, request.query),
      ),
  );

  app.delete(
    '/api/workspaces/:id/invitations/:invitationId/',
    {
      schema: {
        tags,
        params: scopedInvitationParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      await invitations.revokeForWorkspace(currentUser(request).id, request.params.id, request.params.invitationId);
      return reply.code(204).send();
    },
  );

  // --- team invitations ---
  app.post(
    '/api/teams/:id/invitations/',
    {
      schema: {
        tags,
        params: targetParams,
        body: createInvitationBody,
        response: { 201: invitationOut },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await invitations.inviteToTeam(currentUser(request), request.params.id, request.body)),
  );

  app.get(
    '/api/teams/:id/invitations/',
    {
      schema: {
        tags,
        params: targetParams,
        querystring: listQuery,
        response: { 200: paginated(invitationOut) },
      },
    },
    async (request) =>
      toPage(
        request,
        request.query,
        await invitations.listForTeam(currentUser(request).id, request.params.id, request.query),
      ),
  );

  app.delete(
    '/api/teams/:id/invitations/:invitationId/',
    {
      schema: {
        tags,
        params: scopedInvitationParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      await invitations.revokeForTeam(currentUser(request).id, request.params.id, request.params.invitationId);
      return reply.code(204).send();
    },
  );

  // --- the invitee's side ---
  app.get(
    '/api/invitations/',
    {
      schema: {
        tags,
        querystring: pageQuery,
        response: { 200: paginated(invitationOut) },
      },
    },
    async (request) => toPage(request, request.query, await invitations.listMine(currentUser(request), request.query)),
  );

  app.post(
    '/api/invitations/:id/accept/',
    {
      schema: {
        tags,
        params: invitationIdParams,
        body: answerInvitationBody,
        response: { 200: invitationOut },
      },
    },
    async (request) => invitations.accept(currentUser(request), request.params.id, request.body?.token),
  );

  app.post(
    '/api/invitations/:id/decline/',
    {
      schema: {
        tags,
        params: invitationIdParams,
        body: answerInvitationBody,
        response: { 200: invitationOut },
      },
    },
    async (request) => invitations.decline(currentUser(request), request.params.id, request.body?.token),
  );
};
