/**
 * Public API of the chats module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Loading a chat the caller may see (`loadChat`, `ChatAccess`) and the chat errors.
 */
export { loadChat, type ChatAccess } from './chats.access.js';
export { chatErrors } from './chats.errors.js';
