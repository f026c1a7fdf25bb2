import type { Db } from '../../db/client.js';
import { accessTags, type CacheInvalidator } from '../../platform/cache/shared-cache.js';
import { NotAuthenticatedError, PermissionDeniedError } from '../../platform/errors.js';
import { toAccountOut, toUserOut } from '../users/index.js';
import type { MeOut } from './profile.schemas.js';
import type { UserOut } from '../users/index.js';
import { userStore as repo } from '../users/index.js';
import { listWorkspaceRolesOfUser } from '../workspaces/index.js';

// /api/users/me/ lists every workspace of the user; a bound keeps the response finite.
const MAX_WORKSPACES_IN_ME = 500;

/** The caller's own profile (GET /api/users/me/ with their workspaces, PATCH of their name). */
/** `invalidate`: drops the caller's cached credentials (they carry the name) in every process. */
export function createUsersService({ db, invalidate }: { db: Db; invalidate: CacheInvalidator }) {
  return {
    /** The caller with whether their address is proven, and their workspaces. */
    async me(caller: { id: number }): Promise<MeOut> {
      const userId = caller.id;
      const [user, rows] = await Promise.all([
        repo.findUserById(db, userId),
        listWorkspaceRolesOfUser(db, userId, MAX_WORKSPACES_IN_ME),
      ]);
      // Deleted between authentication and here: answer as for a revoked token.
      if (!user) throw new NotAuthenticatedError('Invalid or expired token.', 'authentication_failed');
      return {
        ...toAccountOut(user),
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
      await invalidate(accessTags.user(callerId));
      return toUserOut(user!);
    },
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
