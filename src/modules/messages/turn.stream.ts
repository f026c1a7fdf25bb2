import type { Logger } from 'pino';
import type { AgentEvent } from '../agents/index.js';
import type { EventBuffer } from '../../platform/event-buffer/port.js';
import { SERVICE_UNAVAILABLE_DETAIL } from '../../platform/errors.js';
import { faultLogFields } from '../../platform/faults.js';
import type { ServiceMetrics } from '../../platform/metrics.js';
import { doneEventData } from './messages.mapper.js';
import { isModelFailure, replyFailureDetail } from './messages.errors.js';
import { createStreamRecorder, streamBufferKey } from './stream-replay.js';
import type { GenerationResult, PreparedTurn, TurnEventSink } from './turn.js';

export interface TurnStreamerDeps {
  runTurn: (turn: PreparedTurn, onEvent: (event: AgentEvent) => void) => Promise<GenerationResult>;
  eventBuffer: EventBuffer;
  log: Logger;
  metrics: Pick<ServiceMetrics, 'streamOpened' | 'clientDisconnected'>;
}

/**
 * Phase two of a turn as server-sent events: the event stream is opened only now, after every
 * refusal was answered as a JSON error; from here on failures are `error` events. Every event is
 * numbered and buffered, so a client that loses the connection can reattach
 * (GET stream/{stream_id}/); generation goes on whether or not this client stays.
 */
export function createTurnStreamer({ runTurn, eventBuffer, log, metrics }: TurnStreamerDeps) {
  return async function streamTurn(turn: PreparedTurn, sink: TurnEventSink): Promise<void> {
    const stream = sink.open(turn.streamId);
    const closed = metrics.streamOpened();
    const recorder = createStreamRecorder(eventBuffer, streamBufferKey(turn.access.chat.id, turn.streamId), log);
    const send = (event: string, data: unknown) => {
      const recorded = recorder.record(event, data);
      stream.sendEncoded(recorded.event, recorded.data, recorded.id);
    };
    try {
      const result = await runTurn(turn, (event) => {
        if (event.type === 'delta') send('delta', { text: event.text });
        else send('tool', { id: event.id, name: event.name, status: event.status });
      });
      send('done', doneEventData(result.reply));
    } catch (error) {
      // The model's failure was logged by the runner; a dependency fault is logged without the
      // SQL (faultLogFields), anything else in full.
      const detail = replyFailureDetail(error);
      if (detail === SERVICE_UNAVAILABLE_DETAIL) sink.log.warn(faultLogFields(error), 'streaming reply failed: dependency unavailable');
      else if (!isModelFailure(error)) sink.log.error({ err: error }, 'streaming reply failed');
      send('error', { detail });
    } finally {
      // Closed before we ended it: the client went away (the reply was still generated and saved).
      if (stream.closed) metrics.clientDisconnected();
      // The end reaches the buffer before this client sees the stream end.
      await recorder.flush();
      stream.end();
      closed();
    }
  };
}
