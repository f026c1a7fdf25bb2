import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ServiceUnavailableError } from '../../platform/errors.js';
import { faultLogFields } from '../../platform/faults.js';
import type { PubSub } from '../../platform/pubsub/port.js';
import { withTimeout } from '../../platform/timeout.js';

const STOP_CHANNEL = 'chat-stream-stop';
/**
 * A stop that arrives before its stream registers (the client read `X-Stream-Id` and stopped at
 * once, or the stream starts in another process a moment later) is retained on the pub/sub this
 * long, so that it is honoured when the stream starts, whichever process runs it.
 */
const EARLY_STOP_TTL_MS = 10_000;
/** A stop request answers within about this long: 202, or 503 when the stop cannot be recorded. */
const STOP_TIMEOUT_MS = 1500;
/** Longest a starting stream waits to learn whether a stop was retained for it; then it streams. */
const RETAINED_CHECK_TIMEOUT_MS = 500;
/**
 * Longest a stop waits for the pub/sub before its streams end anyway: clearing its retained copy,
 * or telling the other processes. Until then a stopped stream goes on.
 */
const SHARE_TIMEOUT_MS = 500;
/** Honoured stops remembered at most (the oldest go first), whatever their age. */
const MAX_HONOURED = 10_000;

/**
 * A stop as published and retained. `stopId` names this one stop; `retained` says whether a copy
 * was kept (false: the stop was taken where the stream ran, and published only for the others).
 * Both are absent from an older process's messages.
 */
interface StopMessage {
  chatId: string;
  streamId: string;
  stopId?: string;
  retained?: boolean;
}

interface ActiveStream {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Tracks the replies this process is generating, so that a stop request received by ANY API
 * process reaches the one generating: stops are published on the pub/sub port and every process
 * aborts its own matching stream. A stop is also retained on the pub/sub (in Redis on the
 * distributed profile, not in one process's memory) so that a stream starting after it, in any
 * process, is stopped too. Also lets shutdown wait for generations in flight.
 */
export function createStreamControl({ pubsub, log }: { pubsub: PubSub; log: Logger }) {
  // A set per key: a client may reuse a stream_id while an earlier stream with it still runs;
  // a stop then ends every one of them, and one ending never unregisters another.
  const active = new Map<string, Set<ActiveStream>>();
  /**
   * The stops this process has honoured, by id, with when. One stop reaches a process twice: as
   * the retained copy (read by a stream starting after it) and as the published message, which
   * may be delivered later; and its retained copy lives on until its clear lands. Neither late
   * copy may end a later stream reusing the stream_id, so a stop is honoured once. Kept as long as
   * a stop is retained (the map is in insertion order, the oldest first).
   */
  const honoured = new Map<string, number>();
  const wasHonoured = (stopId: string | undefined) => stopId !== undefined && honoured.has(stopId);
  const rememberHonoured = (stopId: string | undefined) => {
    if (stopId === undefined) return;
    const now = performance.now();
    for (const [old, at] of honoured) {
      if (now - at <= EARLY_STOP_TTL_MS && honoured.size < MAX_HONOURED) break;
      honoured.delete(old);
    }
    honoured.set(stopId, now);
  };
  /**
   * Ends this process's streams with this key that run now, because of a stop: remembered as
   * honoured, then `first` is done (clearing its retained copy, or telling the other processes;
   * waiting at most SHARE_TIMEOUT_MS, a failure logged), then they end. So once a stopped stream
   * has ended, no copy of its stop is left for a later stream reusing the stream_id.
   */
  const stopActive = async (id: string, stopId: string | undefined, first?: { run: () => Promise<void>; failure: string }) => {
    rememberHonoured(stopId);
    const targets = [...(active.get(id) ?? [])];
    if (first) {
      await withTimeout(first.run(), SHARE_TIMEOUT_MS, first.failure).catch((error: unknown) => {
        log.warn({ ...faultLogFields(error), stream: id }, first.failure);
      });
    }
    for (const stream of targets) stream.controller.abort();
  };
  /** A retained stop's clear (left in place, it expires by itself after EARLY_STOP_TTL_MS). */
  const clearRetained = (id: string) => ({
    run: () => pubsub.clearRetained(STOP_CHANNEL, id),
    failure: 'could not clear a retained stream stop',
  });
  let subscribed: Promise<unknown> | undefined;
  const key = (chatId: string, streamId: string) => `${chatId}:${streamId}`;

  function listen() {
    subscribed ??= pubsub
      .subscribe(STOP_CHANNEL, (message) => {
        const { chatId, streamId, stopId, retained } = readStop(message);
        if (chatId === undefined || streamId === undefined) {
          log.warn('ignoring a malformed stop message');
          return;
        }
        const id = key(chatId, streamId);
        // Not running here: it may run in another process, or start later (then, if the stop was
        // retained, its start finds it).
        if (active.has(id) && !wasHonoured(stopId)) void stopActive(id, stopId, retained ? clearRetained(id) : undefined);
      })
      .catch((error: unknown) => {
        subscribed = undefined;
        log.error({ err: error }, 'could not subscribe to stream stops');
      });
    return subscribed;
  }

  return {
    /** Subscribes to stop messages (idempotent); call before the first stream starts. */
    listen,

    isActive(chatId: string, streamId: string): boolean {
      return active.has(key(chatId, streamId));
    },

    /** Runs one generation under a stop signal. The entry is removed when `work` settles. */
    async run<T>(chatId: string, streamId: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
      // Normally subscribed when the app started; if Redis was down then, try again without
      // holding the stream for long (a stop then still reaches it through the retained check).
      await withTimeout(listen(), RETAINED_CHECK_TIMEOUT_MS, 'subscribing to stream stops').catch(() => undefined);
      const id = key(chatId, streamId);
      const controller = new AbortController();
      let finish!: () => void;
      const done = new Promise<void>((resolve) => (finish = resolve));
      const entry = { controller, done };
      let entries = active.get(id);
      if (!entries) active.set(id, (entries = new Set()));
      entries.add(entry);
      try {
        // Registered first, then checked: a stop published from now on is delivered to the
        // subscriber above, one published before is retained. Either way the stream stops.
        try {
          const retained = await withTimeout(pubsub.retained(STOP_CHANNEL, id), RETAINED_CHECK_TIMEOUT_MS, 'reading a retained stop');
          // Even when this stream was stopped meanwhile (by another stop): the retained one must
          // still be cleared, or it would end a later stream reusing the id.
          if (retained !== undefined) {
            const { stopId } = readStop(retained);
            if (!wasHonoured(stopId)) await stopActive(id, stopId, clearRetained(id));
          }
        } catch (error) {
          // Redis unreachable: stream anyway (a stop sent meanwhile was refused with 503).
          log.warn({ ...faultLogFields(error), stream: id }, 'could not check for a retained stream stop');
        }
        return await work(controller.signal);
      } finally {
        entries.delete(entry);
        if (entries.size === 0 && active.get(id) === entries) active.delete(id);
        finish();
      }
    },

    /**
     * Asks every process that runs the stream to stop it, or will run it: the stop is retained for
     * EARLY_STOP_TTL_MS. Answers within STOP_TIMEOUT_MS; a stop that cannot be recorded (Redis
     * unreachable or hung) is a ServiceUnavailableError, so the client knows to retry. A stream
     * running in this process ends at once, and the others are told without retaining.
     */
    async stop(chatId: string, streamId: string): Promise<void> {
      const id = key(chatId, streamId);
      const stopId = randomUUID();
      if (active.has(id)) {
        // It runs here. A reused id may also run in another process: tell the others first, so
        // that no copy of this stop arrives there after the client saw this stream end, and
        // retain nothing. Its own delivery here is ignored (honoured).
        const message = JSON.stringify({ chatId, streamId, stopId, retained: false } satisfies StopMessage);
        await stopActive(id, stopId, {
          run: () => pubsub.publish(STOP_CHANNEL, message),
          failure: 'could not publish a stream stop to the other processes',
        });
        return;
      }
      const message = JSON.stringify({ chatId, streamId, stopId, retained: true } satisfies StopMessage);
      try {
        await withTimeout(pubsub.publishRetained(STOP_CHANNEL, id, message, EARLY_STOP_TTL_MS), STOP_TIMEOUT_MS, 'recording a stream stop');
      } catch (error) {
        log.warn({ ...faultLogFields(error), stream: id }, 'could not record a stream stop');
        throw new ServiceUnavailableError();
      }
    },

    /** Resolves when every generation of this process has finished (graceful shutdown). */
    async drain(): Promise<void> {
      await Promise.all([...active.values()].flatMap((streams) => [...streams].map((stream) => stream.done)));
    },
  };
}

/**
 * A stop message's fields, checked. An older process's message has no `stopId` and counts as
 * retained; a malformed one has no `chatId` or `streamId` (as a retained copy it still stops).
 */
function readStop(message: string): { chatId?: string; streamId?: string; stopId?: string; retained: boolean } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return { retained: true };
  }
  const fields = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return { chatId: text(fields.chatId), streamId: text(fields.streamId), stopId: text(fields.stopId), retained: fields.retained !== false };
}

export type StreamControl = ReturnType<typeof createStreamControl>;
