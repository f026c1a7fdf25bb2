import { z } from 'zod';

export const checkoutBody = z.object({
  plan: z.enum(['pro', 'team', 'business']),
  interval: z.enum(['month', 'year']),
});
export type CheckoutBody = z.output<typeof checkoutBody>;

/** Where to send the browser next (the provider's hosted checkout or portal page). */
export const redirectOut = z.object({ url: z.url() });
export type RedirectOut = z.output<typeof redirectOut>;
