import type { Db } from '../../db/client.js';
import { PermissionDeniedError } from '../../platform/errors.js';
import { toUserOut } from '../auth/auth.service.js';
import type { UserOut } from '../auth/auth.schemas.js';
import { listWorkspaceRolesOfUser } from '../workspaces/workspaces.repo.js';
import type { MeOut } from './users.schemas.js';
import * as repo from './users.repo.js';

// /api/users/me/ lists every workspace of the user; a bound keeps the response finite.
const MAX_WORKSPACES_IN_ME = 500;

export function createUsersService({ db }: { db: Db }) {
  return {
    /** The caller (as authenticated a moment ago) with their workspaces: one query. */
    async me(caller: { id: number; email: string; name: string }): Promise<MeOut> {
      const userId = caller.id;
      const rows = await listWorkspaceRolesOfUser(db, userId, MAX_WORKSPACES_IN_ME);
      return {
        ...toUserOut(caller),
        workspaces: rows.map(({ workspace, role }) => ({
          id: workspace.id,
          name: workspace.name,
          slug: workspace.slug,
          role,
          is_owner: workspace.ownerId === userId,
        })),
      };
    },

    /** Only your own name; anyone else's id (existing or not) is 403. */
    async updateName(callerId: number, targetId: string, name: string): Promise<UserOut> {
      if (String(callerId) !== targetId) {
        throw new PermissionDeniedError('You can only update your own profile.', 'permission_denied');
      }
      const user = await repo.updateUser(db, callerId, { name });
      return toUserOut(user!);
    },
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
