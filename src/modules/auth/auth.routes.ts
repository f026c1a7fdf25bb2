import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import {
  activationBody,
  deleteMeBody,
  loginBody,
  registerBody,
  resendActivationBody,
  resetPasswordBody,
  resetPasswordConfirmBody,
  setEmailBody,
  setEmailConfirmBody,
  setPasswordBody,
  tokenOut,
  updateMeBody,
} from './auth.schemas.js';
import { accountOut, userOut } from '../users/index.js';
import type { AuthService } from './auth.service.js';

const tags = ['auth'];
const noContent = { 204: z.undefined() };

/** Djoser-style account endpoints under /auth/. */
export const authRoutes: FastifyPluginAsyncZod<{ auth: AuthService }> = async (app, { auth }) => {
  app.post(
    '/auth/users/',
    {
      config: { auth: 'optional' },
      schema: {
        tags,
        body: registerBody,
        response: { 201: userOut },
      },
    },
    async (request, reply) => reply.code(201).send(await auth.register(request.body)),
  );

  app.post(
    '/auth/token/login/',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        body: loginBody,
        response: { 200: tokenOut },
      },
    },
    async (request) => auth.login(request.body.email, request.body.password, request.ip),
  );

  app.post('/auth/token/logout/', { schema: { tags, response: noContent } }, async (request, reply) => {
    await auth.logout(currentUser(request));
    return reply.code(204).send();
  });

  app.get('/auth/users/me/', { schema: { tags, response: { 200: accountOut } } }, async (request) =>
    auth.getMe(currentUser(request)),
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/auth/users/me/',
      schema: {
        tags,
        body: updateMeBody,
        response: { 200: accountOut },
      },
      handler: async (request) => auth.updateMe(currentUser(request), request.body),
    });
  }

  app.delete('/auth/users/me/', { schema: { tags, body: deleteMeBody, response: noContent } }, async (request, reply) => {
    await auth.deleteMe(currentUser(request), request.body.current_password);
    return reply.code(204).send();
  });

  app.post(
    '/auth/users/set_password/',
    { schema: { tags, body: setPasswordBody, response: noContent } },
    async (request, reply) => {
      await auth.setPassword(currentUser(request), request.body.current_password, request.body.new_password);
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/users/reset_password/',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        body: resetPasswordBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      await auth.requestPasswordReset(request.body.email, request.ip);
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/users/reset_password_confirm/',
    { config: { auth: 'none' }, schema: { tags, body: resetPasswordConfirmBody, response: noContent } },
    async (request, reply) => {
      const { uid, token, new_password } = request.body;
      await auth.confirmPasswordReset(uid, token, new_password);
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/users/activation/',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        body: activationBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      await auth.activate(request.body.uid, request.body.token);
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/users/resend_activation/',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        body: resendActivationBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      await auth.resendActivation(request.body.email, request.ip);
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/users/set_email/',
    {
      schema: {
        tags,
        body: setEmailBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      await auth.requestEmailChange(
        currentUser(request),
        request.body.current_password,
        request.body.new_email,
        request.ip,
      );
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/users/set_email/confirm/',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        body: setEmailConfirmBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      await auth.confirmEmailChange(request.body.uid, request.body.token);
      return reply.code(204).send();
    },
  );
};
