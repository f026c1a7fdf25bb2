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
        description:
          'Workspace owner or admin. Mails an accept link to the address. 400 `already_member` when the person ' +
          'is already a member; 409 `invitation_pending` while another invitation for the address is pending.',
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
        description: "Workspace owner or admin: the workspace's invitations (not its teams'), newest first.",
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
        description: 'Workspace owner or admin revokes a pending invitation (409 `invitation_not_pending` otherwise).',
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
        description:
          'Team admin, workspace owner or workspace admin. The invitee must already be a member of the workspace ' +
          '(400 `invitee_not_workspace_member`); `role` is the team role.',
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
        description: "Team admin, workspace owner or workspace admin: the team's invitations, newest first.",
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
        description: 'Team admin, workspace owner or workspace admin revokes a pending team invitation.',
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
        description:
          'Your pending, unexpired invitations (matched by your email address), newest first. Empty while your ' +
          'address is not verified.',
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
        description:
          'The invitee joins the workspace (or team) with the invited role. Proof of the address: `{"token"}` from ' +
          'the invitation mail (which also verifies the account\'s address), or no body when the account\'s address ' +
          'is verified and is the invitation\'s. 403 `invitation_email_mismatch` (the token, another account\'s ' +
          'address), 403 `email_not_verified` (no token, unverified address); 404 for anyone else and for a token ' +
          'that is not this invitation\'s; 409 `invitation_not_pending` once accepted, declined or revoked; 410 ' +
          '`invitation_expired`; 409 `workspace_archived`. A team invitation needs current membership of the ' +
          'workspace (403).',
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
        description: 'The invitee declines. Same proof of the address, and the same 403, 404, 409 and 410 rules, as accept.',
        params: invitationIdParams,
        body: answerInvitationBody,
        response: { 200: invitationOut },
      },
    },
    async (request) => invitations.decline(currentUser(request), request.params.id, request.body?.token),
  );
};
