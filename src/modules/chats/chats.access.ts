import type { DbOrTx } from '../../db/client.js';
import { isUuid } from '../../platform/ids.js';
import { assertWritable, requireMember, type WorkspaceAccess } from '../workspaces/index.js';
import { chatErrors } from './chats.errors.js';
import { type ChatViewer, canManageChat, canReadChat, canWriteInChat } from './chats.policy.js';
import * as repo from './chats.repo.js';

export interface ChatAccess {
  workspace: WorkspaceAccess;
  chat: repo.ChatRow;
  viewer: ChatViewer;
}

export type ChatNeed = 'read' | 'write' | 'manage';

/**
 * Loads a chat for a caller: 403 when not a member of the workspace, 404 when the chat does not
 * exist there or the caller may not read it, 403 when they may read it but `need` asks for more.
 * `write` and `manage` also refuse archived workspaces with 409.
 */
export async function loadChat(
  db: DbOrTx,
  workspaceId: string,
  chatId: string,
  userId: number,
  need: ChatNeed,
): Promise<ChatAccess> {
  const workspace = await requireMember(db, workspaceId, userId);
  const chat = isUuid(chatId) ? await repo.findChat(db, workspaceId, chatId) : undefined;
  if (!chat) throw chatErrors.notFound();
  const viewer = { userId, isSharee: chat.ownerId !== userId && (await repo.isSharedWith(db, chat.id, userId)) };
  if (!canReadChat(chat, viewer)) throw chatErrors.notFound();
  if (need === 'manage' && !canManageChat(chat, viewer)) throw chatErrors.ownerOnly();
  if (need === 'write' && !canWriteInChat(chat, viewer)) throw chatErrors.readOnly();
  if (need !== 'read') assertWritable(workspace.workspace);
  return { workspace, chat, viewer };
}
