import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { webhookAck } from './webhook.schemas.js';
import type { WebhookService } from './webhook.service.js';

export const WEBHOOK_PATH = '/api/subscriptions/webhook';

/**
 * The payment provider's webhook. The signature covers the exact bytes sent, so this plugin
 * (encapsulated: the rest of the app keeps normal JSON parsing) keeps JSON bodies as raw buffers
 * and the service parses them after verifying. No user authentication: the signature is the
 * credential.
 */
export const webhookRoutes: FastifyPluginAsyncZod<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.post(
    WEBHOOK_PATH,
    {
      config: { auth: 'none' },
      schema: {
        tags: ['billing'],
        response: { 200: webhookAck },
      },
    },
    async (request) => {
      const body = request.body;
      const raw = Buffer.isBuffer(body) ? body : typeof body === 'string' ? Buffer.from(body) : Buffer.alloc(0);
      const header = request.headers['payment-signature'];
      return webhooks.receive(raw, typeof header === 'string' ? header : undefined, request.log);
    },
  );
};
