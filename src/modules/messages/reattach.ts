import type { Db } from '../../db/client.js';
import { loadChat } from '../chats/index.js';
import * as repo from './messages.repo.js';
import type { EventBuffer } from '../../platform/event-buffer/port.js';
import { isTerminal, type StreamEvent, streamBufferKey } from './stream-replay.js';
import { doneEventData } from './messages.mapper.js';
import { messageErrors } from './messages.errors.js';

/** Longest one wait for new events of a followed stream; the follower then checks its client is still there. */
const FOLLOW_WAIT_MS = 2000;
const STREAM_GONE_DETAIL = 'The stream is no longer available; fetch the chat\'s messages.';

/** Reading a turn's buffered events again (`GET stream/{stream_id}/`), live until its end. */
export function createReattach(deps: { db: Db; eventBuffer: EventBuffer }) {
  const { db, eventBuffer } = deps;

  /**
   * The events of a buffered stream after `afterId`, then live ones until `done` or `error`. The
   * first read (the whole buffer) happened in `reattach`; `signal` ends the wait when the client
   * has gone.
   */
  async function* follow(
    key: string,
    chatId: string,
    streamId: string,
    afterId: number,
    first: StreamEvent[],
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent> {
    let last = afterId;
    let events: StreamEvent[] | null = first;
    while (!signal.aborted) {
      if (events === null) {
        // Expired mid-way (its process died, say): the saved reply if there is one.
        const reply = await repo.findReplyOfStream(db, chatId, streamId);
        if (reply) yield { event: 'done', data: JSON.stringify(doneEventData(reply)) } satisfies StreamEvent;
        else yield { event: 'error', data: JSON.stringify({ detail: STREAM_GONE_DETAIL }) } satisfies StreamEvent;
        return;
      }
      for (const event of events) {
        if (event.id! <= last) continue;
        last = event.id!;
        yield event;
        if (isTerminal(event)) return;
      }
      events = await eventBuffer.read(key, last, FOLLOW_WAIT_MS);
    }
  }

  return async function reattach(
    userId: number,
    workspaceId: string,
    chatId: string,
    streamId: string,
    afterId: number,
    signal: AbortSignal,
  ): Promise<AsyncGenerator<StreamEvent>> {
    const { chat } = await loadChat(db, workspaceId, chatId, userId, 'read');
    const key = streamBufferKey(chat.id, streamId);
    const buffered = await eventBuffer.read(key, 0, 0);
    if (buffered === null) {
      const reply = await repo.findReplyOfStream(db, chat.id, streamId);
      if (!reply) throw messageErrors.streamNotFound();
      return (async function* (): AsyncGenerator<StreamEvent> {
        yield { event: 'done', data: JSON.stringify(doneEventData(reply)) } satisfies StreamEvent;
      })();
    }
    const ended = buffered.some((event) => isTerminal(event) && event.id <= afterId);
    return follow(key, chat.id, streamId, afterId, ended ? [] : buffered, ended ? AbortSignal.abort() : signal);
  };
}
