/**
 * Public API of the messages module: what other modules may use. A chat's messages oldest first
 * (chats' shared-link page receives it through its factory in src/deps.ts). Everything else is
 * HTTP and the `chat.agent-reply` job.
 */
export { listMessagesOfChat } from './messages.repo.js';
