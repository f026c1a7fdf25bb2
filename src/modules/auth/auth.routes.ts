import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import {
  accountOut,
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
  userOut,
} from './auth.schemas.js';
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
        description:
          'Registers an account (403 `signup_disabled` when ALLOW_SIGNUP is false) and mails an activation link. ' +
          'With `invitation_token` (from an invitation mailed to `email`) the address is verified at once and no ' +
          'activation mail is sent, also when sign-up is closed; a token that is not a pending invitation for ' +
          '`email` is 400 `invalid_invitation_token`.',
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
        description:
          '400 `invalid_credentials` for a wrong password or an unknown email alike; 403 `email_not_verified` when ' +
          'REQUIRE_EMAIL_VERIFICATION is on and the address is not verified. THROTTLE_LOGIN per address and per ' +
          'client IP: 429 with Retry-After.',
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
        description:
          'Partial update of `name`. `email` may only repeat the current address; another one is 400 ' +
          '`email_change_requires_confirmation` (use `set_email/`) and nothing is changed.',
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
        description:
          'Mails a single-use reset link when the address has an account; always 204. THROTTLE_LOGIN per address ' +
          'and per client IP: 429 with Retry-After.',
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
        description:
          'Proves the account\'s email address with the uid and token of the activation mail (sent on registration). ' +
          'The token works once and expires after EMAIL_TOKEN_TTL_SECONDS; otherwise 400 `invalid_token`.',
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
        description:
          'Mails a new activation link when the address belongs to an account that is not verified yet; older links ' +
          'stop working. Always 204, so it does not reveal which addresses have accounts. THROTTLE_LOGIN per address ' +
          'and per client IP: 429 with Retry-After.',
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
        description:
          'Asks to change the email address: mails a confirmation link to `new_email` and a notice to the current ' +
          'address; the current address stands until the link is used. 400 `invalid_password`, `email_taken`, ' +
          '`email_unchanged`. THROTTLE_LOGIN per address (the account\'s and the new one) and per client IP: 429 ' +
          'with Retry-After.',
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
        description:
          'Makes the change with the uid and token mailed to the new address, which is then verified. 400 ' +
          '`invalid_token` (wrong, used, expired or superseded link) or `email_taken` (the address was taken meanwhile).',
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
