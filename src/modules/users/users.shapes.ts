import { z } from 'zod';

// Shapes other modules embed (a member, a share, an inviter): kept apart from users.schemas.ts,
// whose `meOut` needs the workspaces module, so that importing them creates no import cycle.

/** An email address as stored: trimmed and lower-cased. */
export const email = z.email().max(254).transform((v) => v.trim().toLowerCase());
export const userName = z.string().trim().max(150);

export const userOut = z.object({ id: z.number().int(), email: z.string(), name: z.string() });
export type UserOut = z.output<typeof userOut>;

/** The caller's own account: a user plus whether its email address is proven. */
export const accountOut = userOut.extend({ email_verified: z.boolean() });
export type AccountOut = z.output<typeof accountOut>;
