import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createRedisClient, firstConnection, quitRedis } from '../redis.js';
import type { BufferedEvent, EventBuffer, EventBufferLimits } from './port.js';

export interface RedisEventBufferOptions extends EventBufferLimits {
  url: string;
  /** REDIS_PREFIX: buffer `k` is the stream `<prefix>:evbuf:{k}` (its run: `<prefix>:evbuf:{k}:run`). */
  prefix: string;
  log: Logger;
  /** Longest an append or read may take (REDIS_COMMAND_TIMEOUT_MS, default 1500 ms). */
  commandTimeoutMs?: number;
}

/**
 * Appends atomically: the first event of a run (id 1) replaces the stream and records the run;
 * an event of another run is dropped. Ids are `<n>-0`, so they are the events' own numbers.
 * KEYS: stream, run. ARGV: run, id, event, data, max events, ttl ms.
 */
const APPEND = `
if ARGV[2] == '1' then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[6])
elseif redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return 0
end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], ARGV[2] .. '-0', 'e', ARGV[3], 'd', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return 1
`;

/** How long one blocking XREAD of the follow loop waits; a reader that starts waiting meanwhile is served at the next round. */
const BLOCK_MS = 200;
/** Events read per call. */
const READ_COUNT = 1000;

type RawEntry = [id: string, fields: string[]];

function toEvent([id, fields]: RawEntry): BufferedEvent {
  const value = (name: string) => fields[fields.indexOf(name) + 1] ?? '';
  return { id: Number.parseInt(id, 10), event: value('e'), data: value('d') };
}

interface Waiter {
  key: string;
  afterId: number;
  settle: (events: BufferedEvent[] | Error) => void;
}

/**
 * Redis Streams, shared by every API process. Appends and non-blocking reads use one connection
 * without an offline queue (bounded, like the pub/sub's publisher). Readers waiting for new events
 * share ONE blocking connection per process: a loop runs `XREAD BLOCK` over every key someone
 * waits on (each from its lowest position) and hands each waiter its events, so a reattached
 * client costs no connection of its own.
 */
export function createRedisEventBuffer(options: RedisEventBufferOptions): EventBuffer {
  const { url, prefix, log, ttlMs, maxEvents } = options;
  const commandTimeoutMs = options.commandTimeoutMs ?? 1500;
  const client: Redis = createRedisClient(url, log, 'event-buffer', { enableOfflineQueue: false, commandTimeout: commandTimeoutMs });
  const blocking: Redis = createRedisClient(url, log, 'event-buffer-follow', {
    enableOfflineQueue: false,
    commandTimeout: BLOCK_MS + commandTimeoutMs,
  });
  const firstConnect = firstConnection(client, commandTimeoutMs);
  const firstBlockingConnect = firstConnection(blocking, commandTimeoutMs);
  const streamName = (key: string) => `${prefix}:evbuf:{${key}}`;
  const runName = (key: string) => `${prefix}:evbuf:{${key}}:run`;
  const waiters = new Set<Waiter>();
  let looping = false;
  let closed = false;

  async function usable() {
    if (closed) throw new Error('The event buffer is closed');
    await firstConnect();
  }

  async function range(key: string, afterId: number): Promise<BufferedEvent[]> {
    const entries = (await client.xrange(streamName(key), `${afterId + 1}-0`, '+', 'COUNT', READ_COUNT)) as RawEntry[];
    return entries.map(toEvent);
  }

  async function followLoop() {
    if (looping) return;
    looping = true;
    try {
      await firstBlockingConnect();
      while (waiters.size && !closed) {
        const from = new Map<string, number>();
        for (const waiter of waiters) from.set(waiter.key, Math.min(from.get(waiter.key) ?? Infinity, waiter.afterId));
        const keys = [...from.keys()];
        let result: Array<[string, RawEntry[]]> | null;
        try {
          result = (await blocking.xread(
            'COUNT',
            READ_COUNT,
            'BLOCK',
            BLOCK_MS,
            'STREAMS',
            ...keys.map(streamName),
            ...keys.map((key) => `${from.get(key)}-0`),
          )) as Array<[string, RawEntry[]]> | null;
        } catch (error) {
          for (const waiter of [...waiters]) waiter.settle(error as Error);
          break;
        }
        for (const [name, entries] of result ?? []) {
          const events = entries.map(toEvent);
          for (const waiter of [...waiters]) {
            if (streamName(waiter.key) !== name) continue;
            const mine = events.filter((event) => event.id > waiter.afterId);
            if (mine.length) waiter.settle(mine);
          }
        }
      }
    } finally {
      looping = false;
      // A waiter that arrived as the loop was leaving.
      if (waiters.size && !closed) void followLoop();
    }
  }

  function waitFor(key: string, afterId: number, waitMs: number): Promise<BufferedEvent[]> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        key,
        afterId,
        settle: (outcome) => {
          clearTimeout(timer);
          waiters.delete(waiter);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        },
      };
      const timer = setTimeout(() => waiter.settle([]), waitMs);
      waiters.add(waiter);
      void followLoop();
    });
  }

  return {
    kind: 'redis',

    async append(key, run, event) {
      await usable();
      await client.eval(APPEND, 2, streamName(key), runName(key), run, String(event.id), event.event, event.data, maxEvents, Math.round(ttlMs));
    },

    async read(key, afterId, waitMs) {
      await usable();
      const ready = await range(key, afterId);
      if (ready.length) return ready;
      if (!(await client.exists(streamName(key)))) return null;
      if (waitMs <= 0) return [];
      const waited = await waitFor(key, afterId, waitMs);
      if (waited.length) return waited;
      // Nothing new: still there, or expired meanwhile?
      return (await client.exists(streamName(key))) ? [] : null;
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const waiter of [...waiters]) waiter.settle([]);
      await Promise.all([quitRedis(client), quitRedis(blocking)]);
    },
  };
}
