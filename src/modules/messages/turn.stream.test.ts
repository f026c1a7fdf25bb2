import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createMemoryEventBuffer } from '../../platform/event-buffer/memory.js';
import type { AgentEvent } from '../agents/index.js';
import type { MessageRow } from './messages.repo.js';
import type { GenerationResult, PreparedTurn, TurnEventSink, TurnEventStream } from './turn.js';
import { createTurnStreamer } from './turn.stream.js';

/*
 * The streamer's own rules, with a recording sink (the SSE response's port): the stream opens on
 * the next turn of the event loop or at the first event, once, and always ends; an open that fails
 * in the scheduled callback is logged and tried again, never thrown out of the callback.
 */

const reply = { id: 'reply-1', parentId: 'user-1', usage: null, stopped: false, sources: [] } as unknown as MessageRow;
const turn = { access: { chat: { id: 'chat-1' } }, streamId: 'stream-1' } as unknown as PreparedTurn;

/** A sink recording what is written; `failOpens` opens throw first. */
function recordingSink(failOpens = 0) {
  const written: string[] = [];
  const errors: string[] = [];
  let opens = 0;
  const sink: TurnEventSink = {
    log: { warn: () => undefined, error: (_fields: unknown, message?: string) => void errors.push(String(message)) } as TurnEventSink['log'],
    open(streamId) {
      opens++;
      if (opens <= failOpens) throw new Error('cannot write the headers');
      written.push(`open ${streamId}`);
      const stream: TurnEventStream = {
        sendEncoded: (event) => void written.push(event),
        end: () => void written.push('end'),
        closed: false,
      };
      return stream;
    },
  };
  return { sink, written, errors, opens: () => opens };
}

function streamer(run: (onEvent: (event: AgentEvent) => void) => Promise<GenerationResult>) {
  return createTurnStreamer({
    runTurn: (_turn, onEvent) => run(onEvent),
    eventBuffer: createMemoryEventBuffer({ ttlMs: 60_000, maxEvents: 100 }),
    log: pino({ level: 'silent' }),
    metrics: { streamOpened: () => () => undefined, clientDisconnected: () => undefined },
  });
}

const result = { reply, userMessage: reply, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, stopped: false };

describe('turn streamer', () => {
  it('opens the stream on the next turn of the event loop, before the model answers, once', async () => {
    const { sink, written, opens } = recordingSink();
    const streamTurn = streamer(async (onEvent) => {
      await sleep(30);
      onEvent({ type: 'delta', text: 'Hi' });
      return result;
    });
    const done = streamTurn(turn, sink);
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual(['open stream-1']);
    await done;
    expect(written).toEqual(['open stream-1', 'delta', 'done', 'end']);
    expect(opens()).toBe(1);
  });

  it('an open that fails in the scheduled callback is logged, not thrown; the first event opens it again', async () => {
    const { sink, written, errors, opens } = recordingSink(1);
    const streamTurn = streamer(async (onEvent) => {
      await sleep(30);
      onEvent({ type: 'delta', text: 'Hi' });
      return result;
    });
    // An exception out of the callback would be uncaught (vitest reports it and fails the run).
    await streamTurn(turn, sink);
    expect(errors).toEqual(['could not open the event stream']);
    expect(opens()).toBe(2);
    expect(written).toEqual(['open stream-1', 'delta', 'done', 'end']);
  });

  it('a turn that fails at once still opens the stream for its error event and ends it', async () => {
    const { sink, written } = recordingSink();
    const streamTurn = streamer(async () => {
      throw new Error('boom');
    });
    await streamTurn(turn, sink);
    expect(written).toEqual(['open stream-1', 'error', 'end']);
  });
});
