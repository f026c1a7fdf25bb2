import type { Logger } from 'pino';
import type { PubSub } from '../../platform/pubsub/port.js';

const STOP_CHANNEL = 'chat-stream-stop';
/**
 * A stop that arrives just before its stream registers (the client read `X-Stream-Id` and
 * stopped at once) is remembered this long, and applied when the stream starts.
 */
const EARLY_STOP_TTL_MS = 10_000;
const MAX_EARLY_STOPS = 10_000;

interface ActiveStream {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Tracks the replies this process is generating, so that a stop request received by ANY API
 * process reaches the one generating: stops are published on the pub/sub port and every process
 * aborts its own matching stream. Also lets shutdown wait for generations in flight.
 */
export function createStreamControl({ pubsub, log }: { pubsub: PubSub; log: Logger }) {
  // A set per key: a client may reuse a stream_id while an earlier stream with it still runs;
  // a stop then ends every one of them, and one ending never unregisters another.
  const active = new Map<string, Set<ActiveStream>>();
  const abortAll = (id: string) => {
    for (const stream of active.get(id) ?? []) stream.controller.abort();
  };
  const earlyStops = new Map<string, number>();
  const rememberStop = (id: string) => {
    const now = Date.now();
    if (earlyStops.size >= MAX_EARLY_STOPS) {
      for (const [stale, expiry] of earlyStops) if (expiry <= now) earlyStops.delete(stale);
      if (earlyStops.size >= MAX_EARLY_STOPS) earlyStops.delete(earlyStops.keys().next().value!);
    }
    earlyStops.set(id, now + EARLY_STOP_TTL_MS);
  };
  const takeEarlyStop = (id: string) => {
    const expiry = earlyStops.get(id);
    if (expiry === undefined) return false;
    earlyStops.delete(id);
    return expiry > Date.now();
  };
  let subscribed: Promise<unknown> | undefined;
  const key = (chatId: string, streamId: string) => `${chatId}:${streamId}`;

  function listen() {
    subscribed ??= pubsub
      .subscribe(STOP_CHANNEL, (message) => {
        try {
          const { chatId, streamId } = JSON.parse(message) as { chatId: string; streamId: string };
          const id = key(chatId, streamId);
          if (active.has(id)) abortAll(id);
          else rememberStop(id);
        } catch (error) {
          log.warn({ err: error }, 'ignoring a malformed stop message');
        }
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
      await listen();
      const id = key(chatId, streamId);
      const controller = new AbortController();
      let finish!: () => void;
      const done = new Promise<void>((resolve) => (finish = resolve));
      const entry = { controller, done };
      let entries = active.get(id);
      if (!entries) active.set(id, (entries = new Set()));
      entries.add(entry);
      if (takeEarlyStop(id)) controller.abort();
      try {
        return await work(controller.signal);
      } finally {
        entries.delete(entry);
        if (entries.size === 0 && active.get(id) === entries) active.delete(id);
        finish();
      }
    },

    /** Asks whichever process runs the stream to stop it. */
    async stop(chatId: string, streamId: string): Promise<void> {
      const id = key(chatId, streamId);
      if (active.has(id)) {
        abortAll(id);
        return;
      }
      await pubsub.publish(STOP_CHANNEL, JSON.stringify({ chatId, streamId }));
    },

    /** Resolves when every generation of this process has finished (graceful shutdown). */
    async drain(): Promise<void> {
      await Promise.all([...active.values()].flatMap((streams) => [...streams].map((stream) => stream.done)));
    },
  };
}

export type StreamControl = ReturnType<typeof createStreamControl>;
