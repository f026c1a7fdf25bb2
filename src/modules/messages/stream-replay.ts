import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { BufferedEvent, EventBuffer } from '../../platform/event-buffer/port.js';
import { faultLogFields } from '../../platform/faults.js';
import { withTimeout } from '../../platform/timeout.js';

/** A chat stream's buffer: per chat, so a stream id is only ever found in its own chat. */
export const streamBufferKey = (chatId: string, streamId: string) => `chat-stream:${chatId}:${streamId}`;

/** An event as the client receives it; `id` is absent only on a `done` rebuilt from the saved reply. */
export interface StreamEvent {
  id?: number;
  event: string;
  /** The event's data, JSON. */
  data: string;
}

export const isTerminal = (event: { event: string }) => event.event === 'done' || event.event === 'error';

/** Longest the end of a stream waits for its last events to reach the buffer. */
const FLUSH_TIMEOUT_MS = 2000;

/**
 * Numbers the events of one live stream (1, 2, ...) and appends each to the event buffer as it
 * is produced, without holding the stream up: the generating process sends its own client the
 * events directly, the buffer serves clients that reattach (from any process). A buffer that
 * cannot be written (Redis unreachable) is logged once; the live stream goes on.
 */
export function createStreamRecorder(buffer: EventBuffer, key: string, log: Logger) {
  const run = randomUUID();
  let sequence = 0;
  let last: Promise<void> = Promise.resolve();
  let failed = false;
  return {
    record(event: string, data: unknown): StreamEvent & { id: number } {
      const entry: BufferedEvent = { id: ++sequence, event, data: JSON.stringify(data) };
      // Appends apply in call order, so the last one settling means every earlier one has.
      last = buffer.append(key, run, entry).catch((error: unknown) => {
        if (failed) return;
        failed = true;
        log.warn({ ...faultLogFields(error), stream: key }, 'could not buffer stream events; reattaching will miss them');
      });
      return entry;
    },
    /** Resolves once every recorded event is in the buffer (or after FLUSH_TIMEOUT_MS). */
    async flush(): Promise<void> {
      await withTimeout(last, FLUSH_TIMEOUT_MS, 'buffering stream events').catch(() => undefined);
    },
  };
}

export type StreamRecorder = ReturnType<typeof createStreamRecorder>;
