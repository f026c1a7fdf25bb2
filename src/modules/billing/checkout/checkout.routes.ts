import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { currentUser } from '../../../platform/auth.js';
import { workspaceIdParams } from '../../workspaces/index.js';
import { checkoutBody, redirectOut } from './checkout.schemas.js';
import type { CheckoutService } from './checkout.service.js';

const tags = ['billing'];
const params = workspaceIdParams;

export const checkoutRoutes: FastifyPluginAsyncZod<{ checkout: CheckoutService }> = async (app, { checkout }) => {
  app.post(
    '/api/workspaces/:id/billing/checkout/',
    {
      schema: {
        tags,
        params,
        body: checkoutBody,
        response: { 200: redirectOut },
      },
    },
    async (request) => checkout.checkout(currentUser(request).id, request.params.id, request.body),
  );

  app.post(
    '/api/workspaces/:id/billing/portal/',
    {
      schema: {
        tags,
        params,
        response: { 200: redirectOut },
      },
    },
    async (request) => checkout.portal(currentUser(request).id, request.params.id),
  );
};
