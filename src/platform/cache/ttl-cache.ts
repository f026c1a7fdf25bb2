/**
 * A bounded in-process map whose entries expire: each entry lives until its own `expiresAt`
 * (at most the cache's TTL), the least recently used entry goes first when the cache is full,
 * and entries carry tags so that every entry of one user, workspace or credential can be dropped
 * at once (`invalidateTags`). Plain data structure: no timers, nothing shared between processes.
 */
export interface TtlCache<V> {
  /** The value, or undefined when missing or expired (an expired entry is dropped). */
  get(key: string): V | undefined;
  /** Stores `value` until `expiresAt` (epoch ms), capped at now + the cache's TTL. */
  set(key: string, value: V, options?: { tags?: readonly string[]; expiresAt?: number }): void;
  delete(key: string): void;
  /** Drops every entry carrying any of these tags. */
  invalidateTags(tags: readonly string[]): void;
  clear(): void;
  readonly size: number;
}

export interface TtlCacheOptions {
  /** Longest an entry lives. */
  ttlMs: number;
  /** Entries kept at most; the least recently used goes first. */
  maxEntries: number;
  /** The clock (tests). */
  now?: () => number;
}

interface Entry<V> {
  value: V;
  expiresAt: number;
  tags: readonly string[];
}

export function createTtlCache<V>({ ttlMs, maxEntries, now = Date.now }: TtlCacheOptions): TtlCache<V> {
  if (maxEntries < 1) throw new Error('maxEntries must be at least 1');
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const entries = new Map<string, Entry<V>>();
  // tag -> keys carrying it; kept exact on every removal so it never outgrows the entries.
  const byTag = new Map<string, Set<string>>();

  function unindex(key: string, entry: Entry<V>) {
    for (const tag of entry.tags) {
      const keys = byTag.get(tag);
      if (!keys) continue;
      keys.delete(key);
      if (keys.size === 0) byTag.delete(tag);
    }
  }

  function remove(key: string) {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    unindex(key, entry);
  }

  return {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.expiresAt <= now()) {
        remove(key);
        return undefined;
      }
      entries.delete(key);
      entries.set(key, entry);
      return entry.value;
    },

    set(key, value, options = {}) {
      const at = now();
      const expiresAt = Math.min(at + ttlMs, options.expiresAt ?? Number.POSITIVE_INFINITY);
      remove(key);
      if (expiresAt <= at) return;
      while (entries.size >= maxEntries) remove(entries.keys().next().value!);
      const tags = [...new Set(options.tags ?? [])];
      entries.set(key, { value, expiresAt, tags });
      for (const tag of tags) {
        let keys = byTag.get(tag);
        if (!keys) byTag.set(tag, (keys = new Set()));
        keys.add(key);
      }
    },

    delete: remove,

    invalidateTags(tags) {
      for (const tag of tags) for (const key of [...(byTag.get(tag) ?? [])]) remove(key);
    },

    clear() {
      entries.clear();
      byTag.clear();
    },

    get size() {
      return entries.size;
    },
  };
}
