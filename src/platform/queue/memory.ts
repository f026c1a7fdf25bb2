import type { Logger } from 'pino';
import { errorMessage } from './jobs.js';
import type { Delivery, DeliveryState, JobQueue } from './port.js';

export interface MemoryQueueOptions {
  concurrency: number;
  log: Logger;
}

/** Finished deliveries are remembered (for `state`) up to this many, oldest forgotten first. */
const MAX_FINISHED = 10_000;
const DEFAULT_DRAIN_TIMEOUT_MS = 60_000;

/**
 * The embedded profile's queue: deliveries live in this process only. A restart loses what was
 * waiting, which the reconciler sees (`state` answers `missing`) and delivers again from the
 * database. Like BullMQ, handlers run asynchronously, at most `concurrency` at once, and a
 * deliveryId is delivered once while it is remembered.
 */
export function createMemoryQueue(options: MemoryQueueOptions): JobQueue {
  const { concurrency, log } = options;
  const states = new Map<string, DeliveryState>();
  const finished: string[] = [];
  const ready: Delivery[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  const idleWaiters = new Set<() => void>();
  let handler: ((delivery: Delivery) => Promise<void>) | undefined;
  let closed = false;

  const isIdle = () => ready.length === 0 && timers.size === 0 && running.size === 0;

  function notifyIfIdle() {
    if (!isIdle()) return;
    for (const resolve of idleWaiters) resolve();
    idleWaiters.clear();
  }

  function finish(delivery: Delivery, state: 'completed' | 'failed') {
    states.set(delivery.deliveryId, state);
    finished.push(delivery.deliveryId);
    if (finished.length > MAX_FINISHED) states.delete(finished.shift()!);
  }

  function push(delivery: Delivery) {
    if (closed) return;
    states.set(delivery.deliveryId, 'waiting');
    ready.push(delivery);
    pump();
  }

  function pump() {
    while (handler && !closed && running.size < concurrency && ready.length > 0) {
      const delivery = ready.shift()!;
      const run = execute(handler, delivery).finally(() => {
        running.delete(run);
        pump();
        notifyIfIdle();
      });
      running.add(run);
    }
  }

  // Never rejects: the job system records outcomes itself; a throw here is an infrastructure failure.
  async function execute(run: (delivery: Delivery) => Promise<void>, delivery: Delivery): Promise<void> {
    // Like a Redis round trip, the handler never runs inside the caller's tick.
    await new Promise<void>((resolve) => setImmediate(resolve));
    states.set(delivery.deliveryId, 'active');
    try {
      await run(delivery);
      finish(delivery, 'completed');
    } catch (error) {
      log.warn({ err: error, job: delivery.name, jobId: delivery.jobId }, `job delivery failed: ${errorMessage(error)}`);
      finish(delivery, 'failed');
    }
  }

  return {
    kind: 'memory',

    async deliver(delivery, deliverOptions = {}) {
      if (closed) throw new Error('The job queue is closed');
      if (states.has(delivery.deliveryId)) return;
      const delayMs = Math.max(0, Math.round(deliverOptions.delayMs ?? 0));
      if (delayMs === 0) return push(delivery);
      states.set(delivery.deliveryId, 'delayed');
      const timer = setTimeout(() => {
        timers.delete(timer);
        push(delivery);
        notifyIfIdle();
      }, delayMs);
      timers.add(timer);
    },

    async state(deliveryId) {
      return states.get(deliveryId) ?? 'missing';
    },

    async startWorker(run) {
      if (closed) throw new Error('The job queue is closed');
      handler ??= run;
      pump();
    },

    drain(timeoutMs) {
      if (isIdle()) return Promise.resolve();
      const ms = timeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          idleWaiters.delete(done);
          reject(new Error(`The job queue did not drain within ${ms} ms`));
        }, ms);
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        idleWaiters.add(done);
      });
    },

    async ping() {},

    async close() {
      if (closed) return;
      closed = true;
      // Waiting deliveries are dropped; their jobs stay queued in the database for the next start.
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      ready.length = 0;
      await Promise.all([...running]);
      notifyIfIdle();
    },
  };
}
