/** What the chat policy needs to know about a chat and the caller. */
export interface ChatFacts {
  ownerId: number;
  isPublic: boolean;
}

export interface ChatViewer {
  userId: number;
  /** The chat is shared with the caller. */
  isSharee: boolean;
}

export const isChatOwner = (chat: ChatFacts, viewer: ChatViewer) => chat.ownerId === viewer.userId;

/** Members read chats they own, chats shared with them and the workspace's public chats. */
export const canReadChat = (chat: ChatFacts, viewer: ChatViewer) =>
  isChatOwner(chat, viewer) || viewer.isSharee || chat.isPublic;

/** Sending, regenerating, editing, stopping and deleting: the owner or a sharee. */
export const canWriteInChat = (chat: ChatFacts, viewer: ChatViewer) => isChatOwner(chat, viewer) || viewer.isSharee;

/** Update, delete, toggle-public, share and revoke-share: the owner only. */
export const canManageChat = isChatOwner;

/**
 * The public link: open to anyone while the chat is public; otherwise only to the owner and
 * sharees who are still members of the workspace.
 */
export const canOpenSharedLink = (chat: ChatFacts, viewer: (ChatViewer & { isMember: boolean }) | null) =>
  chat.isPublic || (viewer !== null && viewer.isMember && (isChatOwner(chat, viewer) || viewer.isSharee));
