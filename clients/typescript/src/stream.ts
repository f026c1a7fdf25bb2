import { ApiError } from './errors.js';
import type { components } from './schema.js';
import { SseParser } from './sse.js';

type Schemas = components['schemas'];

/**
 * The events of a reply stream. `id` is the event's number in its stream (1, 2, 3, ...); only a
 * `done` rebuilt from the saved reply (reattaching after the stream's buffer expired) has none.
 */
export type StreamEvent =
  | { event: 'delta'; id: string | undefined; data: Schemas['StreamDelta'] }
  | { event: 'tool'; id: string | undefined; data: Schemas['StreamTool'] }
  | { event: 'done'; id: string | undefined; data: Schemas['StreamDone'] }
  | { event: 'error'; id: string | undefined; data: Schemas['StreamError'] };

const EVENT_NAMES = new Set(['delta', 'tool', 'done', 'error']);

/** How a dropped stream is reattached: at most `retries` attempts in a row, waiting `initialDelayMs`, doubling up to `maxDelayMs`. */
export interface ReconnectOptions {
  retries?: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
}

/** What a MessageStream needs from the client (kept small so the stream logic reads on its own). */
export interface StreamTransport {
  /** Sends the request that opens the stream (the POST, or the first GET when reattaching by hand). */
  open(signal: AbortSignal): Promise<Response>;
  /** GET `.../messages/stream/{stream_id}/`, with `Last-Event-ID` when given. */
  reattach(lastEventId: string | undefined, signal: AbortSignal): Promise<Response>;
  /** POST `.../messages/stream/stop/`. */
  stop(): Promise<void>;
}

/**
 * A reply as it streams: iterate it with `for await` to get each `delta`, `tool` and the final
 * `done` (or `error`) once, in order. When the connection drops before the last event, it
 * reattaches (GET `.../stream/{stream_id}/` with `Last-Event-ID`) and goes on where it was, skipping
 * nothing and repeating nothing. A refusal before the stream opens (403, 429, ...) is thrown as an
 * `ApiError` by the first step of the iteration. Iterate it once.
 */
export class MessageStream implements AsyncIterable<StreamEvent> {
  /** The reply text received so far (the `delta` events joined). */
  text = '';
  /** How many times the stream was reattached after a dropped connection. */
  reattachCount = 0;
  private lastEventId: string | undefined;
  /** Reattach attempts since the last event received. */
  private failures = 0;
  private readonly controller = new AbortController();
  private started = false;

  constructor(
    /** The stream's id (the SDK chooses it, so `stop()` works before the first event). */
    readonly streamId: string,
    private readonly transport: StreamTransport,
    private readonly reconnect: Required<ReconnectOptions>,
  ) {}

  /** Asks the service to stop the reply: the stream then ends with `done` and `stopped: true`. */
  stop(): Promise<void> {
    return this.transport.stop();
  }

  /** Reads the stream to its end and returns the `done` event's data (throws `StreamFailedError` on `error`). */
  async finished(): Promise<Schemas['StreamDone']> {
    for await (const event of this) {
      if (event.event === 'done') return event.data;
      if (event.event === 'error') throw new StreamFailedError(event.data.detail);
    }
    throw new Error('The stream ended without a done or error event.');
  }

  /** Closes the connection (the reply goes on being generated and saved by the service). */
  close(): void {
    this.controller.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    if (this.started) throw new Error('A MessageStream can be iterated once.');
    this.started = true;
    let response = await this.transport.open(this.controller.signal);
    if (!response.ok) throw await ApiError.read(response);
    try {
      for (;;) {
        let finished = false;
        try {
          for await (const event of this.events(response)) {
            this.failures = 0;
            yield event;
            if (event.event === 'done' || event.event === 'error') {
              finished = true;
              break;
            }
          }
        } catch (error) {
          if (this.controller.signal.aborted) throw error;
          // A dropped connection: reattach below.
        }
        if (finished || this.controller.signal.aborted) return;
        response = await this.reattachWithRetries();
        this.reattachCount += 1;
      }
    } finally {
      this.controller.abort();
    }
  }

  /** The events of one response, new ones only (an event whose id was already seen is skipped). */
  private async *events(response: Response): AsyncGenerator<StreamEvent> {
    if (!response.body) return;
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
        for (const raw of done ? [...parser.push(text), ...parser.end()] : parser.push(text)) {
          if (!EVENT_NAMES.has(raw.event)) continue;
          if (raw.id !== undefined) {
            if (this.lastEventId !== undefined && !isAfter(raw.id, this.lastEventId)) continue;
            this.lastEventId = raw.id;
          }
          const event = { event: raw.event, id: raw.id, data: JSON.parse(raw.data) } as StreamEvent;
          if (event.event === 'delta') this.text += event.data.text;
          yield event;
        }
        if (done) return;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** Reattaches, retrying network failures and 5xx answers with backoff; a 4xx answer is thrown. */
  private async reattachWithRetries(): Promise<Response> {
    for (;;) {
      if (this.failures >= this.reconnect.retries) {
        throw new StreamDisconnectedError(this.streamId, this.lastEventId);
      }
      await sleep(Math.min(this.reconnect.maxDelayMs, this.reconnect.initialDelayMs * 2 ** this.failures), this.controller.signal);
      this.failures += 1;
      try {
        const response = await this.transport.reattach(this.lastEventId, this.controller.signal);
        if (response.ok) return response;
        if (response.status < 500) throw await ApiError.read(response);
        await response.body?.cancel();
      } catch (error) {
        if (error instanceof ApiError || this.controller.signal.aborted) throw error;
      }
    }
  }
}

/** The stream ended with an `error` event (the reply failed after the stream opened). */
export class StreamFailedError extends Error {
  override readonly name = 'StreamFailedError';
  constructor(readonly detail: string) {
    super(detail);
  }
}

/** The connection dropped and every reattach attempt failed. */
export class StreamDisconnectedError extends Error {
  override readonly name = 'StreamDisconnectedError';
  constructor(
    readonly streamId: string,
    readonly lastEventId: string | undefined,
  ) {
    super(`The stream ${streamId} dropped and could not be reattached (last event ${lastEventId ?? 'none'}).`);
  }
}

/** Event ids are the event's number in its stream; compare numerically when both are numbers. */
function isAfter(id: string, last: string): boolean {
  const [a, b] = [Number(id), Number(last)];
  return Number.isFinite(a) && Number.isFinite(b) ? a > b : id !== last;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
