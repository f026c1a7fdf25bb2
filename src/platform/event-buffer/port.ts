/** One buffered event of a stream: its number in the stream (1, 2, ...), its name and its JSON data. */
export interface BufferedEvent {
  id: number;
  event: string;
  data: string;
}

/**
 * The recent events of live streams, kept for a while so that a client that lost its connection
 * can read them again and follow the rest, from any API process. One writer per stream (the
 * process generating it) appends; any process reads.
 */
export interface EventBuffer {
  readonly kind: 'memory' | 'redis';
  /**
   * Appends `event` to the buffer under `key` (in call order: calls need not be awaited one by
   * one). The first event of a run (id 1) replaces whatever the key held; events of an older run
   * that still appends under the key are dropped, so the buffer follows the newest run. Every
   * append keeps the buffer for the TTL from now; at most the configured number of events is
   * kept (the oldest go).
   */
  append(key: string, run: string, event: BufferedEvent): Promise<void>;
  /**
   * The events after `afterId` (0: from the start), oldest first. When there are none yet,
   * waits up to `waitMs` for one. `null` when nothing is buffered under `key` (never was, or
   * expired).
   */
  read(key: string, afterId: number, waitMs: number): Promise<BufferedEvent[] | null>;
  close(): Promise<void>;
}

export interface EventBufferLimits {
  /** How long a buffer is kept after its last event. */
  ttlMs: number;
  /** Events kept per buffer (Redis trims approximately, so possibly a few more). */
  maxEvents: number;
}
