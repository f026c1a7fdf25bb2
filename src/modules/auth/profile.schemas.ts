import { z } from 'zod';
import { workspaceRoles } from '../workspaces/index.js';
import { accountOut, userName } from '../users/index.js';

export const meOut = accountOut.extend({
  workspaces: z.array(
    z.object({
      id: z.uuid(),
      name: z.string(),
      slug: z.string(),
      role: z.enum(workspaceRoles),
      is_owner: z.boolean(),
    }),
  ),
});
export type MeOut = z.output<typeof meOut>;

export const userIdParams = z.object({ id: z.string().max(20) });
export const updateUserBody = z.object({ name: userName });
