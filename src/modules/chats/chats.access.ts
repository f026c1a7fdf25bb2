import type { DbOrTx } from '../../db/client.js';
import { accessTags, type CacheRegion } from '../../platform/cache/shared-cache.js';
import { isUuid } from '../../platform/ids.js';
import { assertWritable, requireMember, type WorkspaceAccess } from '../workspaces/index.js';
import { chatErrors } from './chats.errors.js';
import { type ChatViewer, canManageChat, canReadChat, canWriteInChat } from './chats.policy.js';
import * as repo from './chats.repo.js';

export interface ChatAccess {
  workspace: WorkspaceAccess;
  chat: Readonly<repo.ChatRow>;
  viewer: ChatViewer;
}

export type ChatNeed = 'read' | 'write' | 'manage';

/**
 * What loadChat reads of a chat for a caller, as its cache keeps it: the row and whether it is
 * shared with them. Dropped by every change of the chat's row or shares (accessTags.chat), of the
 * caller's membership, the workspace, the caller or the owner (a deleted user's chats go with
 * them), but not by the chat's activity: `chat.updatedAt` of a cached entry may be older than the
 * last reply, so callers that show the chat itself (chats' own routes) load it without the cache.
 */
export interface CachedChat {
  chat: Readonly<repo.ChatRow>;
  isSharee: boolean;
}

/**
 * Loads a chat for a caller: 403 when not a member of the workspace, 404 when the chat does not
 * exist there or the caller may not read it, 403 when they may read it but `need` asks for more.
 * `write` and `manage` also refuse archived workspaces with 409. With `cache`, the chat and its
 * share come from it when they can (CachedChat); the membership is checked every time.
 */
export async function loadChat(
  db: DbOrTx,
  workspaceId: string,
  chatId: string,
  userId: number,
  need: ChatNeed,
  cache?: CacheRegion<CachedChat>,
): Promise<ChatAccess> {
  const workspace = await requireMember(db, workspaceId, userId);
  const found = !isUuid(chatId) ? undefined : cache ? await cachedChat(cache, db, workspaceId, chatId, userId) : await readChat(db, workspaceId, chatId, userId);
  if (!found) throw chatErrors.notFound();
  const { chat } = found;
  const viewer = { userId, isSharee: found.isSharee };
  if (!canReadChat(chat, viewer)) throw chatErrors.notFound();
  if (need === 'manage' && !canManageChat(chat, viewer)) throw chatErrors.ownerOnly();
  if (need === 'write' && !canWriteInChat(chat, viewer)) throw chatErrors.readOnly();
  if (need !== 'read') assertWritable(workspace.workspace);
  return { workspace, chat, viewer };
}

async function readChat(db: DbOrTx, workspaceId: string, chatId: string, userId: number): Promise<CachedChat | undefined> {
  const chat = await repo.findChat(db, workspaceId, chatId);
  if (!chat) return undefined;
  return { chat, isSharee: chat.ownerId !== userId && (await repo.isSharedWith(db, chat.id, userId)) };
}

/** readChat through the cache (CachedChat); a chat not found is never cached. */
function cachedChat(cache: CacheRegion<CachedChat>, db: DbOrTx, workspaceId: string, chatId: string, userId: number) {
  return cache.through(`${workspaceId.toLowerCase()}:${chatId.toLowerCase()}:${userId}`, async () => {
    const value = await readChat(db, workspaceId, chatId, userId);
    if (!value) return undefined;
    const { chat, isSharee } = value;
    const tags = [accessTags.chat(chat.id), accessTags.membership(workspaceId, userId), accessTags.workspace(workspaceId), accessTags.user(userId), accessTags.user(chat.ownerId)];
    // Shared by every request it answers: frozen.
    return { value: Object.freeze({ chat: Object.freeze(chat), isSharee }), tags };
  });
}
