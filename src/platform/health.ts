import { faultLogFields } from './faults.js';
import { withTimeout } from './timeout.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';

export type ReadinessCheck = () => Promise<void>;

/**
 * A check that has not answered by then has failed: the checks run in parallel, so `/readyz`
 * answers within about this long even when PostgreSQL or Redis hangs (load balancers give up
 * after a few seconds).
 */
const CHECK_TIMEOUT_MS = 2500;

const readyOut = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.enum(['ok', 'failed'])),
});

/** `/healthz`: the process answers. `/readyz`: every dependency it needs answers too. */
export function registerHealth(app: FastifyInstance, checks: Record<string, ReadinessCheck>): void {
  app.get(
    '/healthz',
    { config: { auth: 'none' }, schema: { tags: ['operations'], response: { 200: z.object({ status: z.literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    { config: { auth: 'none' }, schema: { tags: ['operations'], response: { 200: readyOut, 503: readyOut } } },
    async (request, reply) => {
      const entries = await Promise.all(
        Object.entries(checks).map(async ([name, check]) => {
          try {
            await withTimeout(check(), CHECK_TIMEOUT_MS, `running the ${name} check`);
            return [name, 'ok'] as const;
          } catch (error) {
            request.log.warn({ ...faultLogFields(error), check: name }, 'readiness check failed');
            return [name, 'failed'] as const;
          }
        }),
      );
      const ok = entries.every(([, state]) => state === 'ok');
      return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks: Object.fromEntries(entries) });
    },
  );
}
