import type { Db } from '../../db/client.js';
import { accessTags, type CacheInvalidator } from '../../platform/cache/shared-cache.js';
import { isUuid } from '../../platform/ids.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { toUserOut } from '../users/index.js';
import { assertWritable, requireMember } from './workspaces.access.js';
import { workspaceErrors } from './workspaces.errors.js';
import { type MembershipChangeRefusal, refuseMemberRemoval, refuseRoleChange } from './workspaces.policy.js';
import * as repo from './workspaces.repo.js';
import type { MembershipOut, WorkspaceRole } from './workspaces.schemas.js';

export function toMembershipOut(row: repo.MembershipWithUser): MembershipOut {
  return {
    id: row.id,
    workspace: row.workspaceId,
    user: toUserOut(row.user),
    role: row.role,
    created_at: row.createdAt.toISOString(),
  };
}

const refusalError: Record<MembershipChangeRefusal, () => Error> = {
  not_owner_or_admin: workspaceErrors.ownerOrAdminOnly,
  own_role: workspaceErrors.cannotChangeOwnRole,
  owner_role: workspaceErrors.cannotChangeOwnerRole,
  owner_removal: workspaceErrors.cannotRemoveOwner,
};

/**
 * `removeMemberAccess`: what else a member loses on leaving or removal (teams, chat shares; src/deps.ts).
 * `invalidate`: drops cached memberships (workspaces.access.ts) in every process after a change.
 */
export function createMembershipsService({
  db,
  removeMemberAccess,
  invalidate,
}: {
  db: Db;
  removeMemberAccess: repo.MemberAccessRemoval;
  invalidate: CacheInvalidator;
}) {
  /** The membership if it is in one of the caller's workspaces (else 404), with the caller's access. */
  async function loadVisible(userId: number, membershipId: string, write: boolean) {
    const target = isUuid(membershipId) ? await repo.findMembershipById(db, membershipId) : undefined;
    if (!target) throw workspaceErrors.membershipNotFound();
    const access = await requireMember(db, target.workspaceId, userId).catch(() => {
      throw workspaceErrors.membershipNotFound();
    });
    if (write) assertWritable(access.workspace);
    return { target, access, targetIsOwner: access.workspace.ownerId === target.userId };
  }

  return {
    async list(userId: number, query: PageQuery & { workspace?: string }): Promise<PageResult<MembershipOut>> {
      const { rows, count } = await repo.listVisibleMemberships(db, userId, {
        workspaceId: query.workspace,
        limit: query.limit,
        offset: query.offset,
      });
      return { count, results: rows.map(toMembershipOut) };
    },

    async mine(userId: number): Promise<MembershipOut[]> {
      return (await repo.listMembershipsOfUser(db, userId)).map(toMembershipOut);
    },

    async get(userId: number, membershipId: string): Promise<MembershipOut> {
      return toMembershipOut((await loadVisible(userId, membershipId, false)).target);
    },

    async changeRole(userId: number, membershipId: string, role: WorkspaceRole): Promise<MembershipOut> {
      const { target, access, targetIsOwner } = await loadVisible(userId, membershipId, true);
      const refusal = refuseRoleChange(access, { userId: target.userId, isOwner: targetIsOwner });
      if (refusal) throw refusalError[refusal]();
      await repo.setMembershipRole(db, target.workspaceId, target.userId, role);
      await invalidate(accessTags.membership(target.workspaceId, target.userId));
      return toMembershipOut({ ...target, role });
    },

    /** Removes a member (and their team memberships); an admin may remove themselves. */
    async remove(userId: number, membershipId: string): Promise<void> {
      const { target, access, targetIsOwner } = await loadVisible(userId, membershipId, true);
      const refusal = refuseMemberRemoval(access, { userId: target.userId, isOwner: targetIsOwner });
      if (refusal) throw refusalError[refusal]();
      await db.transaction(async (tx) => {
        const locked = await repo.lockWorkspace(tx, target.workspaceId);
        if (locked?.ownerId === target.userId) throw workspaceErrors.cannotRemoveOwner();
        await removeMemberAccess(tx, target.workspaceId, target.userId);
        await repo.removeMember(tx, target.workspaceId, target.userId);
      });
      await invalidate(accessTags.membership(target.workspaceId, target.userId));
    },
  };
}

export type MembershipsService = ReturnType<typeof createMembershipsService>;
