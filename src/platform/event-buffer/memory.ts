import type { BufferedEvent, EventBuffer, EventBufferLimits } from './port.js';

/** Buffers kept at most (the least recently written go first); Redis' memory bounds the other adapter. */
const MAX_BUFFERS = 10_000;

interface Buffer {
  run: string;
  events: BufferedEvent[];
  expiresAt: number;
  waiters: Set<() => void>;
}

/** The embedded profile's event buffer: one process, so a map of arrays with their expiry. */
export function createMemoryEventBuffer(limits: EventBufferLimits): EventBuffer {
  const buffers = new Map<string, Buffer>();
  let closed = false;

  function live(key: string): Buffer | undefined {
    const buffer = buffers.get(key);
    if (buffer && buffer.expiresAt <= Date.now()) {
      buffers.delete(key);
      for (const wake of buffer.waiters) wake();
      return undefined;
    }
    return buffer;
  }

  function after(buffer: Buffer, afterId: number) {
    return buffer.events.filter((event) => event.id > afterId);
  }

  return {
    kind: 'memory',

    async append(key, run, event) {
      if (closed) throw new Error('The event buffer is closed');
      let buffer = live(key);
      if (event.id === 1) {
        const waiters = buffer?.waiters ?? new Set();
        buffer = { run, events: [], expiresAt: 0, waiters };
      } else if (!buffer || buffer.run !== run) {
        return;
      }
      buffer.events.push(event);
      if (buffer.events.length > limits.maxEvents) buffer.events.splice(0, buffer.events.length - limits.maxEvents);
      buffer.expiresAt = Date.now() + limits.ttlMs;
      // Re-inserted last: the map stays ordered by last write, the eviction order below.
      buffers.delete(key);
      buffers.set(key, buffer);
      if (buffers.size > MAX_BUFFERS) {
        for (const stale of [...buffers.keys()].slice(0, buffers.size - MAX_BUFFERS)) buffers.delete(stale);
      }
      for (const wake of [...buffer.waiters]) wake();
    },

    async read(key, afterId, waitMs) {
      if (closed) throw new Error('The event buffer is closed');
      const buffer = live(key);
      if (!buffer) return null;
      const ready = after(buffer, afterId);
      if (ready.length || waitMs <= 0) return ready;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          buffer.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, waitMs);
        buffer.waiters.add(wake);
      });
      const current = live(key);
      return current ? after(current, afterId) : null;
    },

    async close() {
      closed = true;
      for (const buffer of buffers.values()) for (const wake of [...buffer.waiters]) wake();
      buffers.clear();
    },
  };
}
