import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createMemoryEventBuffer } from '../../platform/event-buffer/memory.js';
import type { AgentEvent } from '../agents/index.js';
import type { MessageRow } from './messages.repo.js';
import type { GenerationResult, PreparedTurn, TurnEventSink, TurnEventStream } from './turn.js';
import { createTurnStreamer } from './turn.stream.js';

/*
 * The streamer's own rules, with a recording sink (the SSE response's port): the stream opens
 * before the model is called, once, carries the turn's events and always ends.
 */

const reply = { id: 'reply-1', parentId: 'user-1', usage: null, stopped: false, sources: [] } as unknown as MessageRow;
const turn = { access: { chat: { id: 'chat-1' } }, streamId: 'stream-1' } as unknown as PreparedTurn;

/** A sink recording what is written. */
function recordingSink() {
  const written: string[] = [];
  let opens = 0;
  const sink: TurnEventSink = {
    log: { warn: () => undefined, error: () => undefined },
    open(streamId) {
      opens++;
      written.push(`open ${streamId}`);
      const stream: TurnEventStream = {
        sendEncoded: (event) => void written.push(event),
        end: () => void written.push('end'),
        closed: false,
      };
      return stream;
    },
  };
  return { sink, written, opens: () => opens };
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
  it('opens the stream before the model is called, once, and ends it after done', async () => {
    const { sink, written, opens } = recordingSink();
    let writtenAtCall: string[] | undefined;
    const streamTurn = streamer(async (onEvent) => {
      writtenAtCall = [...written];
      await sleep(30);
      onEvent({ type: 'delta', text: 'Hi' });
      return result;
    });
    const done = streamTurn(turn, sink);
    expect(writtenAtCall).toEqual(['open stream-1']);
    await done;
    expect(written).toEqual(['open stream-1', 'delta', 'done', 'end']);
    expect(opens()).toBe(1);
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
