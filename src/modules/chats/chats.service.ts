import type { Db } from '../../db/client.js';
import type { PageQuery, PageResult } from '../../platform/pagination.js';
import { accessTags, type CacheInvalidator, type CacheRegion } from '../../platform/cache/shared-cache.js';
import { isUuid } from '../../platform/ids.js';
import type { CreditService } from '../billing/index.js';
import type { ModelCatalog } from '../models/index.js';
import { findUserByEmail } from '../users/index.js';
import { requireMember, type WorkspaceAccess } from '../workspaces/index.js';
import { findWorkspaceWithMembership, requestReaches } from '../workspaces/index.js';
import { toUserOut } from '../users/index.js';
import { loadChat } from './chats.access.js';
import { chatErrors } from './chats.errors.js';
import { canOpenSharedLink } from './chats.policy.js';
import * as repo from './chats.repo.js';
import type { ChatOut, CreateChatInput, PublicChatOut, ShareOut, UpdateChatInput } from './chats.schemas.js';

export function toChatOut(row: repo.ChatRow): ChatOut {
  return {
    id: row.id,
    workspace: row.workspaceId,
    owner: row.ownerId,
    name: row.name,
    ai_model: row.aiModel,
    ai_provider: row.aiProvider,
    system_prompt: row.systemPrompt,
    temperature: row.temperature,
    agent_framework: row.agentFramework,
    model_parameters: row.modelParameters,
    is_public: row.isPublic,
    link_uuid: row.linkUuid,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

function toShareOut(row: { id: string; createdAt: Date; user: { id: number; email: string; name: string } }): ShareOut {
  return { id: row.id, user: toUserOut(row.user), created_at: row.createdAt.toISOString() };
}

/** What a shared chat's page shows of each message. */
export interface ChatMessageForExport {
  id: string;
  role: PublicChatOut['messages'][number]['role'];
  content: string;
  parentId: string | null;
  stopped: boolean;
  createdAt: Date;
}

export interface ChatsServiceDeps {
  /**
   * Chat list pages cached per member and page, dropped on every change of the workspace's chats,
   * shares or activity and with the member's membership (src/deps.ts; off: read every time).
   */
  listCache?: CacheRegion<PageResult<ChatOut>>;
  /** Drops cached entries by tag in every process (after the change committed). */
  invalidate?: CacheInvalidator;
  db: Db;
  catalog: ModelCatalog;
  credit: CreditService;
  /** A chat's messages oldest first, for its export (messages owns them; src/deps.ts). */
  messagesOfChat: (db: Db, chatId: string) => Promise<ChatMessageForExport[]>;
}

export function createChatsService({ db, catalog, credit, messagesOfChat, listCache, invalidate }: ChatsServiceDeps) {
  /** After a change to the workspace's chats (rows, shares, public state): with `chatId`, that chat's access too. */
  const changed = async (workspaceId: string, chatId?: string) => {
    await invalidate?.(accessTags.chatList(workspaceId), ...(chatId ? [accessTags.chat(chatId)] : []));
  };

  async function listPage(workspaceId: string, userId: number, page: PageQuery): Promise<PageResult<ChatOut>> {
    const { rows, count } = await repo.listVisibleChats(db, workspaceId, userId, page.limit, page.offset);
    return { count, results: rows.map(toChatOut) };
  }

  /**
   * A model the workspace may use now: known (400), in the plan's tiers (402
   * `model_not_in_plan`) and with credit left (402 `credit_exhausted`).
   */
  async function checkModel(access: WorkspaceAccess, modelId: string | undefined) {
    const { model } = await credit.check({
      workspace: access.workspace,
      model: (plan) => {
        const id = modelId ?? plan.default_model;
        const found = catalog.chatModel(id);
        if (!found) throw chatErrors.unknownModel(id);
        return found;
      },
    });
    return model!;
  }

  return {
    async list(userId: number, workspaceId: string, page: PageQuery): Promise<PageResult<ChatOut>> {
      await requireMember(db, workspaceId, userId);
      if (!listCache) return listPage(workspaceId, userId, page);
      const key = `${workspaceId.toLowerCase()}:${userId}:${page.limit}:${page.offset}`;
      const cached = await listCache.through(key, async () => {
        const value = await listPage(workspaceId, userId, page);
        // Shared by every request it answers: frozen.
        value.results.forEach((chat) => Object.freeze(chat));
        Object.freeze(value.results);
        const tags = [accessTags.chatList(workspaceId), accessTags.membership(workspaceId, userId), accessTags.workspace(workspaceId), accessTags.user(userId)];
        return { value: Object.freeze(value), tags };
      });
      return cached!;
    },

    async create(userId: number, workspaceId: string, input: CreateChatInput): Promise<ChatOut> {
      const access = await requireMember(db, workspaceId, userId, { write: true });
      const model = await checkModel(access, input.ai_model);
      const row = await repo.insertChat(db, {
        workspaceId,
        ownerId: userId,
        name: input.name,
        aiModel: model.id,
        aiProvider: model.provider,
        systemPrompt: input.system_prompt,
        temperature: input.temperature ?? null,
        agentFramework: input.agent_framework,
        modelParameters: input.model_parameters,
      });
      await changed(workspaceId);
      return toChatOut(row);
    },

    async get(userId: number, workspaceId: string, chatId: string): Promise<ChatOut> {
      return toChatOut((await loadChat(db, workspaceId, chatId, userId, 'read')).chat);
    },

    /** Owner only; switching to another model re-checks the plan and credit. */
    async update(userId: number, workspaceId: string, chatId: string, input: UpdateChatInput): Promise<ChatOut> {
      const { workspace, chat } = await loadChat(db, workspaceId, chatId, userId, 'manage');
      const values: Partial<repo.NewChat> = {};
      if (input.ai_model !== undefined && input.ai_model !== chat.aiModel) {
        const model = await checkModel(workspace, input.ai_model);
        values.aiModel = model.id;
        values.aiProvider = model.provider;
      }
      if (input.name !== undefined) values.name = input.name;
      if (input.system_prompt !== undefined) values.systemPrompt = input.system_prompt;
      if (input.temperature !== undefined) values.temperature = input.temperature;
      if (input.agent_framework !== undefined) values.agentFramework = input.agent_framework;
      if (input.model_parameters !== undefined) values.modelParameters = input.model_parameters;
      const row = await repo.updateChat(db, chat.id, values);
      await changed(workspaceId, chat.id);
      return toChatOut(row);
    },

    async delete(userId: number, workspaceId: string, chatId: string): Promise<void> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'manage');
      await repo.deleteChat(db, chat.id);
      await changed(workspaceId, chat.id);
    },

    async togglePublic(userId: number, workspaceId: string, chatId: string) {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'manage');
      const row = await repo.updateChat(db, chat.id, { isPublic: !chat.isPublic });
      await changed(workspaceId, chat.id);
      return { is_public: row.isPublic, link_uuid: row.linkUuid };
    },

    /** Shares with a current member other than the owner; sharing twice is harmless. */
    async share(userId: number, workspaceId: string, chatId: string, email: string): Promise<{ share: ShareOut; created: boolean }> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'manage');
      const target = await findUserByEmail(db, email);
      if (!target || target.id === chat.ownerId) throw chatErrors.shareTargetInvalid();
      if (!(await findWorkspaceWithMembership(db, workspaceId, target.id))) throw chatErrors.shareTargetInvalid();
      const existed = await repo.findShare(db, chat.id, target.id);
      const share = existed ?? (await repo.insertShare(db, chat.id, target.id, userId));
      if (!existed) await changed(workspaceId, chat.id);
      return { share: toShareOut(share!), created: !existed };
    },

    async revokeShare(userId: number, workspaceId: string, chatId: string, email: string): Promise<void> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'manage');
      const target = await findUserByEmail(db, email);
      if (!target || !(await repo.deleteShare(db, chat.id, target.id))) throw chatErrors.shareNotFound();
      await changed(workspaceId, chat.id);
    },

    /** Marks a chat active now (a new reply brings it to the top of everyone's list). */
    async touch(chat: { id: string; workspaceId: string }): Promise<void> {
      await repo.touchChat(db, chat.id);
      // This process's lists drop at once; the reply does not wait for the publish to other processes.
      void changed(chat.workspaceId);
    },

    async listShares(userId: number, workspaceId: string, chatId: string, page: PageQuery): Promise<PageResult<ShareOut>> {
      const { chat } = await loadChat(db, workspaceId, chatId, userId, 'read');
      const { rows, count } = await repo.listShares(db, chat.id, page.limit, page.offset);
      return { count, results: rows.map(toShareOut) };
    },

    /** The read-only link view; 404 for anyone the link is not open to. */
    async sharedView(userId: number | null, linkUuid: string): Promise<PublicChatOut> {
      const chat = isUuid(linkUuid) ? await repo.findChatByLink(db, linkUuid) : undefined;
      if (!chat) throw chatErrors.notFound();
      const viewer =
        userId === null
          ? null
          : {
              userId,
              // An API key limited to another workspace reads the link like a non-member.
              isMember: requestReaches(chat.workspaceId) && Boolean(await findWorkspaceWithMembership(db, chat.workspaceId, userId)),
              isSharee: await repo.isSharedWith(db, chat.id, userId),
            };
      if (!canOpenSharedLink(chat, viewer)) throw chatErrors.notFound();
      const messages = await messagesOfChat(db, chat.id);
      return {
        name: chat.name,
        ai_model: chat.aiModel,
        ai_provider: chat.aiProvider,
        is_public: chat.isPublic,
        created_at: chat.createdAt.toISOString(),
        messages: messages.map((m) => ({
          id: m.id,
          role: m.role,
          content: m.content,
          parent: m.parentId,
          stopped: m.stopped,
          created_at: m.createdAt.toISOString(),
        })),
      };
    },
  };
}

export type ChatsService = ReturnType<typeof createChatsService>;
