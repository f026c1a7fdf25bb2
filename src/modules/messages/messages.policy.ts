/** Message rules 3-6 of the spec; rules 1-2 (read/write the chat) live in the chats policy. */
export interface MessageFacts {
  role: 'user' | 'assistant';
  authorId: number | null;
}

/** Rule 3: only a message's author can edit it (so only user messages). */
export const canEditMessage = (message: MessageFacts, userId: number) => message.role === 'user' && message.authorId === userId;

/** Rule 4: regenerating is open to the message's author and the chat's owner. */
export const canRegenerate = (message: MessageFacts, userId: number, chatOwnerId: number) =>
  message.authorId === userId || chatOwnerId === userId;

/** Rule 5: replies are deleted by the chat's owner; a user message by its author or the chat's owner. */
export const canDeleteMessage = (message: MessageFacts, userId: number, chatOwnerId: number) =>
  chatOwnerId === userId || (message.role === 'user' && message.authorId === userId);

/** Rule 6: only assistant messages can be rated. */
export const canRateMessage = (message: MessageFacts) => message.role === 'assistant';
