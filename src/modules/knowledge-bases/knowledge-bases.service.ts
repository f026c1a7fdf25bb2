import type { Db } from '../../db/client.js';
import { accessTags, type CacheInvalidator } from '../../platform/cache/shared-cache.js';
import { isUuid } from '../../platform/ids.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { loadChat } from '../chats/index.js';
import { toDocumentOut, visibleDocumentIds } from '../documents/index.js';
import type { DocumentOut } from '../documents/index.js';
import { findTeam } from '../teams/index.js';
import { requireMember, type WorkspaceAccess } from '../workspaces/index.js';
import { isOwnerOrAdmin } from '../workspaces/index.js';
import { kbErrors } from './knowledge-bases.errors.js';
import { canManageKb, canReadKb, canWriteKb, type KbViewer } from './knowledge-bases.policy.js';
import * as repo from './knowledge-bases.repo.js';
import type { KbOut } from './knowledge-bases.schemas.js';

type Need = 'read' | 'write' | 'manage';

export function toKbOut(row: repo.KbRow, documentCount: number): KbOut {
  return {
    id: row.id,
    workspace: row.workspaceId,
    name: row.name,
    description: row.description,
    is_shared_with_workspace: row.isSharedWithWorkspace,
    created_by: row.createdBy,
    document_count: documentCount,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

const viewerOf = (access: WorkspaceAccess) => ({ userId: access.userId, isOwnerOrAdmin: isOwnerOrAdmin(access) });

export function createKnowledgeBasesService({ db, invalidate }: { db: Db; invalidate?: CacheInvalidator }) {
  /** After a change of which knowledge bases the workspace's chats have (a turn caches whether its chat has any). */
  const linksChanged = (workspaceId: string) => invalidate?.(accessTags.chatKnowledge(workspaceId));

  /** 403 non-member; 404 unknown or unreadable; 403 when readable but `need` asks for more; 409 archived writes. */
  async function loadKb(userId: number, workspaceId: string, kbId: string, need: Need) {
    const access = await requireMember(db, workspaceId, userId, { write: need !== 'read' });
    const kb = isUuid(kbId) ? await repo.findKb(db, workspaceId, kbId) : undefined;
    if (!kb) throw kbErrors.notFound();
    const viewer: KbViewer = { ...viewerOf(access), teamPermission: await repo.teamPermission(db, kb.id, userId) };
    if (!canReadKb(kb, viewer)) throw kbErrors.notFound();
    if (need === 'write' && !canWriteKb(kb, viewer)) throw kbErrors.readOnly();
    if (need === 'manage' && !canManageKb(kb, viewer)) throw kbErrors.manageOnly();
    return { access, kb };
  }

  async function withCount(kb: repo.KbRow): Promise<KbOut> {
    const { count } = await repo.listKbDocuments(db, kb.id, 1, 0);
    return toKbOut(kb, count);
  }

  return {
    async list(userId: number, workspaceId: string, page: PageQuery): Promise<PageResult<KbOut>> {
      const access = await requireMember(db, workspaceId, userId);
      const { rows, count } = await repo.listReadableKbs(db, workspaceId, viewerOf(access), page.limit, page.offset);
      return { count, results: await Promise.all(rows.map(withCount)) };
    },

    async create(
      userId: number,
      workspaceId: string,
      input: { name: string; description: string; is_shared_with_workspace: boolean },
    ): Promise<KbOut> {
      await requireMember(db, workspaceId, userId, { write: true });
      const kb = await repo.insertKb(db, {
        workspaceId,
        name: input.name,
        description: input.description,
        isSharedWithWorkspace: input.is_shared_with_workspace,
        createdBy: userId,
      });
      return toKbOut(kb, 0);
    },

    async get(userId: number, workspaceId: string, kbId: string): Promise<KbOut> {
      return withCount((await loadKb(userId, workspaceId, kbId, 'read')).kb);
    },

    async update(
      userId: number,
      workspaceId: string,
      kbId: string,
      input: { name?: string; description?: string; is_shared_with_workspace?: boolean },
    ): Promise<KbOut> {
      const { access, kb } = await loadKb(userId, workspaceId, kbId, 'write');
      // Sharing with the whole workspace widens who can read: an access rule, like team access.
      const sharingChanges = input.is_shared_with_workspace !== undefined && input.is_shared_with_workspace !== kb.isSharedWithWorkspace;
      if (sharingChanges && !canManageKb(kb, { ...viewerOf(access), teamPermission: null })) throw kbErrors.manageOnly();
      const updated = await repo.updateKb(db, kb.id, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.is_shared_with_workspace !== undefined ? { isSharedWithWorkspace: input.is_shared_with_workspace } : {}),
      });
      return withCount(updated);
    },

    /** Deleting a knowledge base keeps its documents (they may be in other knowledge bases). */
    async delete(userId: number, workspaceId: string, kbId: string): Promise<void> {
      const { kb } = await loadKb(userId, workspaceId, kbId, 'manage');
      await repo.deleteKb(db, kb.id);
      await linksChanged(kb.workspaceId);
    },

    /** Links documents the caller can see; linking twice is harmless. */
    async addDocuments(userId: number, workspaceId: string, kbId: string, documentIds: string[]): Promise<KbOut> {
      const { access, kb } = await loadKb(userId, workspaceId, kbId, 'write');
      const ids = [...new Set(documentIds)];
      const visible = await visibleDocumentIds(db, workspaceId, ids, { ...viewerOf(access), inReadableKb: repo.documentInReadableKb(viewerOf(access)) });
      const missing = ids.filter((id) => !visible.has(id));
      if (missing.length) throw kbErrors.unknownDocuments(missing);
      await repo.addDocuments(db, kb.id, ids, userId);
      return withCount(kb);
    },

    async removeDocuments(userId: number, workspaceId: string, kbId: string, documentIds: string[]): Promise<KbOut> {
      const { kb } = await loadKb(userId, workspaceId, kbId, 'write');
      await repo.removeDocuments(db, kb.id, [...new Set(documentIds)]);
      return withCount(kb);
    },

    async listDocuments(userId: number, workspaceId: string, kbId: string, page: PageQuery): Promise<PageResult<DocumentOut>> {
      const { kb } = await loadKb(userId, workspaceId, kbId, 'read');
      const { rows, count } = await repo.listKbDocuments(db, kb.id, page.limit, page.offset);
      const kbIds = await repo.kbIdsOfDocuments(db, rows.map((r) => r.id));
      return { count, results: rows.map((row) => toDocumentOut(row, kbIds.get(row.id) ?? [])) };
    },

    async listTeamAccess(userId: number, workspaceId: string, kbId: string) {
      const { kb } = await loadKb(userId, workspaceId, kbId, 'read');
      return (await repo.listTeamAccess(db, kb.id)).map((rule) => ({
        id: rule.id,
        team: rule.teamId,
        team_name: rule.teamName,
        permission: rule.permission,
        created_at: rule.createdAt.toISOString(),
      }));
    },

    /** Grants (or changes) a team's rule; the team must belong to the same workspace. */
    async grantTeamAccess(userId: number, workspaceId: string, kbId: string, teamId: string, permission: 'read' | 'write') {
      const { kb } = await loadKb(userId, workspaceId, kbId, 'manage');
      const team = await findTeam(db, teamId);
      if (!team || team.workspaceId !== workspaceId) throw kbErrors.unknownTeam();
      await repo.upsertTeamAccess(db, kb.id, teamId, permission);
      return this.listTeamAccess(userId, workspaceId, kbId);
    },

    async revokeTeamAccess(userId: number, workspaceId: string, kbId: string, teamId: string): Promise<void> {
      const { kb } = await loadKb(userId, workspaceId, kbId, 'manage');
      if (!(await repo.deleteTeamAccess(db, kb.id, teamId))) throw kbErrors.ruleNotFound();
    },

    // --- chats -----------------------------------------------------------------------------------

    async listForChat(userId: number, workspaceId: string, chatId: string): Promise<KbOut[]> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'read');
      return Promise.all((await repo.listChatKbs(db, chat.id)).map(withCount));
    },

    /** Attaching needs write access to the chat and read access to every knowledge base. */
    async attach(userId: number, workspaceId: string, chatId: string, kbIds: string[]): Promise<KbOut[]> {
      const { chat, workspace } = await loadChat(db, workspaceId, chatId, userId, 'write');
      const ids = [...new Set(kbIds)];
      const readable = new Set((await repo.findReadableKbs(db, workspaceId, ids, viewerOf(workspace))).map((kb) => kb.id));
      const missing = ids.filter((id) => !readable.has(id));
      if (missing.length) throw kbErrors.unknownKbs(missing);
      await repo.attachToChat(db, chat.id, ids);
      await linksChanged(chat.workspaceId);
      return Promise.all((await repo.listChatKbs(db, chat.id)).map(withCount));
    },

    async detach(userId: number, workspaceId: string, chatId: string, kbIds: string[]): Promise<KbOut[]> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'write');
      await repo.detachFromChat(db, chat.id, [...new Set(kbIds)]);
      await linksChanged(chat.workspaceId);
      return Promise.all((await repo.listChatKbs(db, chat.id)).map(withCount));
    },
  };
}

export type KnowledgeBasesService = ReturnType<typeof createKnowledgeBasesService>;
