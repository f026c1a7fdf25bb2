import type { Db } from '../../db/client.js';
import { accessTags, type CacheInvalidator } from '../../platform/cache/shared-cache.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { randomToken } from '../../platform/secrets.js';
import { requireMember } from './workspaces.access.js';
import { workspaceErrors } from './workspaces.errors.js';
import {
  canDeleteWorkspace,
  canLeaveWorkspace,
  canTransferOwnership,
  canUpdateWorkspace,
} from './workspaces.policy.js';
import * as repo from './workspaces.repo.js';
import type { WorkspaceOut } from './workspaces.schemas.js';

export function toWorkspaceOut(row: repo.WorkspaceRow): WorkspaceOut {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    owner: row.ownerId,
    status: row.status,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** `"Acme Research Ltd."` → `acme-research-ltd`; accents folded, at most 50 characters. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50)
    .replace(/-+$/, '');
  return slug || 'workspace';
}

/**
 * `removeMemberAccess`: what else a member loses on leaving or removal (teams, chat shares; src/deps.ts).
 * `invalidate`: drops cached memberships (workspaces.access.ts) in every process after a change.
 */
export function createWorkspacesService({
  db,
  removeMemberAccess,
  invalidate,
}: {
  db: Db;
  removeMemberAccess: repo.MemberAccessRemoval;
  invalidate: CacheInvalidator;
}) {
  return {
    /** Every workspace with its owner's email, for operators (admin CLI); no membership check. */
    async listAll(options: { limit?: number; offset?: number; search?: string } = {}) {
      const rows = await repo.listAllWorkspaces(db, {
        limit: Math.min(Math.max(options.limit ?? 100, 1), 1000),
        offset: Math.max(options.offset ?? 0, 0),
        search: options.search?.slice(0, 200),
      });
      return rows.map((row) => ({ ...toWorkspaceOut(row.workspace), ownerEmail: row.ownerEmail }));
    },

    async list(userId: number, page: PageQuery): Promise<PageResult<WorkspaceOut>> {
      const { rows, count } = await repo.listWorkspacesOfUser(db, userId, page.limit, page.offset);
      return { count, results: rows.map((r) => toWorkspaceOut(r.workspace)) };
    },

    /** Creates the workspace with a unique slug; the creator is its owner with an admin membership. */
    async create(userId: number, name: string): Promise<WorkspaceOut> {
      const base = slugify(name);
      return db.transaction(async (tx) => {
        // The slug index decides races: on a clash try a suffixed slug instead.
        for (let attempt = 0; attempt < 8; attempt++) {
          const slug = attempt === 0 ? base : `${base.slice(0, 43)}-${randomToken(4).toLowerCase().replace(/[^a-z0-9]/g, 'x')}`;
          const workspace = await repo.insertWorkspace(tx, { name, slug, ownerId: userId });
          if (workspace) {
            await repo.insertMembership(tx, { workspaceId: workspace.id, userId, role: 'admin' });
            return toWorkspaceOut(workspace);
          }
        }
        throw new Error('could not find a free workspace slug');
      });
    },

    async get(userId: number, workspaceId: string): Promise<WorkspaceOut> {
      const access = await requireMember(db, workspaceId, userId);
      return toWorkspaceOut(access.workspace);
    },

    /** Owner or admin; allowed while archived, since setting `status` back to active un-archives. */
    async update(userId: number, workspaceId: string, input: { name?: string; status?: 'active' | 'archived' }) {
      const access = await requireMember(db, workspaceId, userId);
      if (!canUpdateWorkspace(access)) throw workspaceErrors.ownerOrAdminOnly();
      if (input.name === undefined && input.status === undefined) return toWorkspaceOut(access.workspace);
      const updated = await repo.updateWorkspace(db, workspaceId, input);
      await invalidate(accessTags.workspace(workspaceId));
      return toWorkspaceOut(updated);
    },

    async delete(userId: number, workspaceId: string): Promise<void> {
      const access = await requireMember(db, workspaceId, userId);
      if (!canDeleteWorkspace(access)) throw workspaceErrors.ownerOnly();
      await repo.deleteWorkspace(db, workspaceId);
      await invalidate(accessTags.workspace(workspaceId));
    },

    /** Hands the workspace to another current member; the old owner stays on as admin. */
    async transferOwnership(userId: number, workspaceId: string, newOwnerId: number): Promise<WorkspaceOut> {
      const access = await requireMember(db, workspaceId, userId, { write: true });
      if (!canTransferOwnership(access)) throw workspaceErrors.ownerOnly();
      if (newOwnerId === userId) throw workspaceErrors.transferTargetNotMember();
      const updated = await db.transaction(async (tx) => {
        const locked = await repo.lockWorkspace(tx, workspaceId);
        // Re-checked under the lock: a concurrent transfer may have moved ownership already.
        if (!locked || locked.ownerId !== userId) throw workspaceErrors.ownerOnly();
        const target = await repo.findWorkspaceWithMembership(tx, workspaceId, newOwnerId);
        if (!target) throw workspaceErrors.transferTargetNotMember();
        await repo.setMembershipRole(tx, workspaceId, newOwnerId, 'admin');
        await repo.setMembershipRole(tx, workspaceId, userId, 'admin');
        return repo.updateWorkspace(tx, workspaceId, { ownerId: newOwnerId });
      });
      // The owner and both roles changed: every entry of the workspace goes.
      await invalidate(accessTags.workspace(workspaceId));
      return toWorkspaceOut(updated);
    },

    /** Anyone but the owner may leave, also while archived. */
    async leave(userId: number, workspaceId: string): Promise<void> {
      const access = await requireMember(db, workspaceId, userId);
      if (!canLeaveWorkspace(access)) throw workspaceErrors.ownerCannotLeave();
      await db.transaction(async (tx) => {
        const locked = await repo.lockWorkspace(tx, workspaceId);
        if (locked?.ownerId === userId) throw workspaceErrors.ownerCannotLeave();
        await removeMemberAccess(tx, workspaceId, userId);
        await repo.removeMember(tx, workspaceId, userId);
      });
      await invalidate(accessTags.membership(workspaceId, userId));
    },
  };
}

export type WorkspacesService = ReturnType<typeof createWorkspacesService>;
