import type { Logger } from 'pino';
import { faultLogFields } from '../faults.js';
import type { PubSub } from '../pubsub/port.js';
import { withTimeout } from '../timeout.js';
import { createTtlCache, type TtlCache } from './ttl-cache.js';

const CHANNEL = 'cache-invalidate';
/** Longest a writer waits for its invalidation to be published before answering anyway. */
const PUBLISH_TIMEOUT_MS = 1000;

/** What a loader hands the cache: the value, the tags that invalidate it and (optionally) when it stops being valid. */
export interface Cacheable<V> {
  value: V;
  tags: readonly string[];
  /** Epoch ms after which the value must not be served (a token's expiry); capped by the TTL. */
  expiresAt?: number;
}

/** One kind of cached value (credentials, memberships), keyed by strings. */
export interface CacheRegion<V> {
  /**
   * The cached value, else `load()`'s (stored unless the cache is off or bypassing, or an
   * invalidation ran while it loaded). `undefined` from the loader (not found, not allowed) is
   * never stored: negative answers always come from the database. Concurrent misses of one key
   * share one load (its answer or its error), unless an invalidation came after it began.
   */
  through(key: string, load: () => Promise<Cacheable<V> | undefined>): Promise<V | undefined>;
}

export interface SharedCache {
  region<V>(name: string): CacheRegion<V>;
  /**
   * Drops every entry carrying any of `tags`, here at once and in every other process through the
   * pub/sub. Call after the change has committed. Never throws: a publish that fails is logged
   * (other processes then serve the old entry for at most the TTL).
   */
  invalidate(...tags: string[]): Promise<void>;
  /** Empties this process's cache (nothing is published): after the database was changed behind the service's back. */
  clear(): void;
  /** Subscribes to other processes' invalidations (idempotent); until it has, the cache is bypassed. */
  listen(): Promise<void>;
  /** Whether values are served from memory now (on, subscribed, and the subscription receiving). */
  readonly serving: boolean;
  close(): Promise<void>;
}

export interface SharedCacheOptions {
  pubsub: PubSub;
  log: Logger;
  enabled: boolean;
  ttlMs: number;
  /** Entries per region at most. */
  maxEntries: number;
  now?: () => number;
}

/**
 * A per-process cache kept coherent between processes by invalidation messages on the pub/sub
 * port. Pub/sub delivery is at most once, so the cache only serves while its subscription is
 * known to receive: before the subscription is active and from the moment the subscribing
 * connection is lost until it is back, every region is empty and reads go to the loader. A lost
 * message can therefore never keep an entry beyond the TTL.
 *
 * Races: a load that started before an invalidation of one of its tags (local, remote) or before
 * the cache was cleared (a lost subscription) must not store what it read, which may predate the
 * change. Every invalidation is numbered and remembered per tag while loads are in flight; a load
 * stores its value only if none of its tags, and no clearing, came after it began. (Per tag, so
 * the constant invalidations of busy chat lists do not keep credentials from being cached.)
 * Concurrent misses of one key share one load; any invalidation or clearing empties that table
 * of loads in flight, since a load's tags are known only when it ends.
 */
export function createSharedCache({ pubsub, log, enabled, ttlMs, maxEntries, now }: SharedCacheOptions): SharedCache {
  const regions = new Map<string, TtlCache<unknown>>();
  // Per region, the loads in flight by key: concurrent misses of one key share one load.
  const inFlight = new Map<string, Map<string, Promise<unknown>>>();
  // Numbered invalidations: the last clearing, and per tag the last one while any load is in flight.
  let sequence = 0;
  let clearedAt = 0;
  const invalidatedAt = new Map<string, number>();
  let loading = 0;
  let subscribed = false;
  let receiving = true;
  let closed = false;
  let listening: Promise<void> | undefined;
  let listenFailed = false;
  let unsubscribe: (() => Promise<void>) | undefined;

  const serving = () => enabled && subscribed && receiving && !closed;

  function dropAll() {
    sequence++;
    clearedAt = sequence;
    invalidatedAt.clear();
    for (const cache of regions.values()) cache.clear();
    for (const loads of inFlight.values()) loads.clear();
  }

  function dropTags(tags: readonly string[]) {
    sequence++;
    for (const tag of tags) invalidatedAt.set(tag, sequence);
    for (const cache of regions.values()) cache.invalidateTags(tags);
    // A load in flight may have read what just changed (its tags are known only once it ends):
    // later misses start their own.
    for (const loads of inFlight.values()) loads.clear();
  }

  /** Whether a value loaded since `started` with these tags may be stored. */
  const unchangedSince = (started: number, tags: readonly string[]) =>
    clearedAt <= started && tags.every((tag) => (invalidatedAt.get(tag) ?? 0) <= started);

  const unwatch = pubsub.watchSubscriptions((isReceiving) => {
    // Lost: messages may be missed from here on. Back: whatever was missed meanwhile is unknown.
    // Either way nothing cached before can be trusted.
    receiving = isReceiving;
    dropAll();
    if (isReceiving) log.info('cache invalidations received again: cache serving');
    else log.warn('cache invalidations may be missed: cache bypassed until the subscription is back');
  });

  function onMessage(message: string) {
    try {
      const tags = JSON.parse(message) as unknown;
      if (!Array.isArray(tags) || !tags.every((tag) => typeof tag === 'string')) throw new Error('not a list of tags');
      dropTags(tags);
    } catch (error) {
      // Unknown shape: drop everything rather than keep something that should have gone.
      dropAll();
      log.warn({ err: error }, 'malformed cache invalidation: cache cleared');
    }
  }

  const shared: SharedCache = {
    region<V>(name: string): CacheRegion<V> {
      let cache = regions.get(name);
      if (!cache) regions.set(name, (cache = createTtlCache<unknown>({ ttlMs, maxEntries, now })));
      const store = cache as TtlCache<V>;
      let loads = inFlight.get(name) as Map<string, Promise<V | undefined>> | undefined;
      if (!loads) inFlight.set(name, (loads = new Map()));
      const pending = loads;

      async function loadAndStore(key: string, load: () => Promise<Cacheable<V> | undefined>): Promise<V | undefined> {
        const started = sequence;
        loading++;
        try {
          const loaded = await load();
          if (!loaded) return undefined;
          if (serving() && unchangedSince(started, loaded.tags)) store.set(key, loaded.value, { tags: loaded.tags, expiresAt: loaded.expiresAt });
          return loaded.value;
        } finally {
          // Nothing in flight can be overtaken any more: the per-tag record may go.
          if (--loading === 0) invalidatedAt.clear();
        }
      }

      return {
        async through(key, load) {
          if (!serving()) {
            // Subscribing failed earlier (rare: Redis subscriptions wait for a connection): try again.
            if (enabled && listenFailed && !listening && !closed) void shared.listen();
            return (await load())?.value;
          }
          const hit = store.get(key);
          if (hit !== undefined) return hit;
          // A burst of requests for one key (a chat's first sends) waits for one load, not one each.
          const joined = pending.get(key);
          if (joined) return joined;
          const ownLoad = loadAndStore(key, load);
          pending.set(key, ownLoad);
          try {
            return await ownLoad;
          } finally {
            if (pending.get(key) === ownLoad) pending.delete(key);
          }
        },
      };
    },

    async invalidate(...tags) {
      if (!tags.length) return;
      dropTags(tags);
      if (!enabled || closed) return;
      try {
        await withTimeout(pubsub.publish(CHANNEL, JSON.stringify(tags)), PUBLISH_TIMEOUT_MS, 'publishing a cache invalidation');
      } catch (error) {
        log.warn({ ...faultLogFields(error), tags: tags.length }, 'could not publish a cache invalidation: other processes keep their entries until the TTL');
      }
    },

    clear: dropAll,

    listen() {
      if (!enabled) return Promise.resolve();
      listening ??= pubsub.subscribe(CHANNEL, onMessage).then(
        (stop) => {
          unsubscribe = stop;
          if (closed) return void stop().catch(() => undefined);
          dropAll();
          subscribed = true;
        },
        (error: unknown) => {
          listening = undefined;
          listenFailed = true;
          log.error({ err: error }, 'could not subscribe to cache invalidations: cache bypassed');
        },
      );
      return listening;
    },

    get serving() {
      return serving();
    },

    async close() {
      closed = true;
      unwatch();
      dropAll();
      await unsubscribe?.().catch(() => undefined);
    },
  };
  return shared;
}

/** What writers receive: drop the entries with these tags everywhere (after their change committed). */
export type CacheInvalidator = (...tags: string[]) => Promise<void>;

/**
 * The tags of the access caches (credentials, memberships): one place, so a writer and the entry
 * it must drop always agree. Workspace ids are lowercased (a path may spell a UUID in capitals).
 */
export const accessTags = {
  /** Everything about one user: their credentials (name, email, active) and their memberships. */
  user: (userId: number) => `user:${userId}`,
  /** One session token or API key (by its id). */
  credential: (id: string) => `credential:${id}`,
  /** The workspace row in every membership entry of that workspace. */
  workspace: (workspaceId: string) => `workspace:${workspaceId.toLowerCase()}`,
  /** One user's membership of one workspace. */
  membership: (workspaceId: string, userId: number) => `membership:${workspaceId.toLowerCase()}:${userId}`,
  /** Every member's cached chat list of one workspace (chats.service): any chat, share or activity change. */
  chatList: (workspaceId: string) => `chat-list:${workspaceId.toLowerCase()}`,
  /**
   * One chat as a send reads it (row and shares, chats' loadChat with a cache): dropped by every
   * change of the chat's row or shares, not by its activity (a reply's touch).
   */
  chat: (chatId: string) => `chat:${chatId.toLowerCase()}`,
  /** Whether the chats of one workspace have knowledge attached: dropped by attach, detach and a knowledge base's deletion. */
  chatKnowledge: (workspaceId: string) => `chat-knowledge:${workspaceId.toLowerCase()}`,
  /** Every cached billing state (a catalog change, a product's plan or a price, may move any workspace's plan). */
  billing: () => 'billing',
  /** One workspace's cached billing state (an operator's plan override, a subscription event). */
  billingOf: (workspaceId: string) => `billing:${workspaceId.toLowerCase()}`,
};
