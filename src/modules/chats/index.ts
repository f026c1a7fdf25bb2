/**
 * Public API of the chats module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Loading a chat the caller may see (`loadChat`, `ChatAccess`) and the chat errors.
 */
export { loadChat, type CachedChat, type ChatAccess, type ChatNeed } from './chats.access.js';
export { chatErrors } from './chats.errors.js';
/** Run by workspaces (through src/deps.ts) when a member leaves or is removed, in that transaction. */
export { removeUserSharesInWorkspace } from './chats.repo.js';
/** The chat row by id (a stored reply's chat) and its last-activity stamp, for messages. */
export { findChatById } from './chats.repo.js';
