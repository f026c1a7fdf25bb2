import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import {
  COMPLETED_RETENTION_SECONDS,
  DefinitionMap,
  FAILED_RETENTION_SECONDS,
  type ResolvedDefinition,
  UnrecoverableJobError,
  backoffDelay,
  drainTimeout,
  errorMessage,
  prepareEnqueue,
  runHandler,
} from './jobs.js';
import type { JobQueue } from './port.js';

export interface MemoryQueueOptions {
  concurrency: number;
  log: Logger;
}

interface MemoryJob {
  key: string;
  id: string;
  definition: ResolvedDefinition;
  data: unknown;
  /** Runs started so far. */
  attemptsMade: number;
}

/**
 * The embedded profile's queue: jobs live in this process only (a restart loses waiting and
 * delayed jobs, so handlers must tolerate never running, as on any queue). It mirrors BullMQ's
 * behaviour: handlers run asynchronously, at most `concurrency` at once, failures are retried
 * with the same exponential backoff, and a job id is remembered as long as BullMQ keeps it.
 */
export function createMemoryQueue(options: MemoryQueueOptions): JobQueue {
  const { concurrency, log } = options;
  const definitions = new DefinitionMap();
  /** Idempotency: job key -> time until which it is remembered (Infinity while pending). */
  const known = new Map<string, number>();
  const ready: MemoryJob[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  const idleWaiters = new Set<() => void>();
  let started = false;
  let closed = false;

  const isIdle = () => ready.length === 0 && timers.size === 0 && running.size === 0;

  function notifyIfIdle() {
    if (!isIdle()) return;
    for (const resolve of idleWaiters) resolve();
    idleWaiters.clear();
  }

  function remember(key: string, seconds: number) {
    known.set(key, Date.now() + seconds * 1000);
  }

  function prune() {
    const now = Date.now();
    for (const [key, until] of known) if (until <= now) known.delete(key);
  }

  function later(ms: number, fn: () => void) {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
      notifyIfIdle();
    }, ms);
    timers.add(timer);
  }

  function schedule(job: MemoryJob, delayMs: number) {
    if (delayMs > 0) later(delayMs, () => push(job));
    else push(job);
  }

  function push(job: MemoryJob) {
    if (closed) return;
    ready.push(job);
    pump();
  }

  function pump() {
    while (started && !closed && running.size < concurrency && ready.length > 0) {
      const job = ready.shift()!;
      const run = execute(job).finally(() => {
        running.delete(run);
        pump();
        notifyIfIdle();
      });
      running.add(run);
    }
  }

  // Never rejects: a failing handler is logged and retried or given up, the process keeps going.
  async function execute(job: MemoryJob): Promise<void> {
    // Like a Redis round trip, the handler never runs inside the caller's tick.
    await new Promise<void>((resolve) => setImmediate(resolve));
    job.attemptsMade += 1;
    const attempt = job.attemptsMade;
    const { definition } = job;
    const context = { jobId: job.id, attempt, isFinalAttempt: attempt >= definition.attempts };
    try {
      await runHandler(definition, job.data, context);
      remember(job.key, COMPLETED_RETENTION_SECONDS);
    } catch (error) {
      const unrecoverable = error instanceof UnrecoverableJobError;
      const fields = { err: error, job: definition.name, jobId: job.id, attempt, attempts: definition.attempts };
      if (!unrecoverable && attempt < definition.attempts && !closed) {
        const delay = backoffDelay(definition.backoffMs, attempt);
        log.warn({ ...fields, retryInMs: delay }, `job failed, will retry: ${errorMessage(error)}`);
        later(delay, () => push(job));
      } else if (!unrecoverable && attempt < definition.attempts) {
        log.warn(fields, `job failed while the queue was closing; its retry is dropped: ${errorMessage(error)}`);
      } else {
        log.error(fields, `job failed for good: ${errorMessage(error)}`);
        remember(job.key, FAILED_RETENTION_SECONDS);
      }
    }
  }

  return {
    kind: 'memory',

    register(definition) {
      if (started) throw new Error('Register jobs before starting the worker');
      definitions.add(definition);
    },

    async enqueue(name, payload, enqueueOptions = {}) {
      if (closed) throw new Error('The job queue is closed');
      const definition = definitions.get(name);
      const { data, delayMs } = prepareEnqueue(definition, payload, enqueueOptions);
      const id = enqueueOptions.jobId ?? randomUUID();
      const key = `${name}\u0000${id}`;
      const until = known.get(key);
      if (until !== undefined && until > Date.now()) return { jobId: id };
      if (known.size > 10_000) prune();
      known.set(key, Number.POSITIVE_INFINITY);
      schedule({ key, id, definition, data, attemptsMade: 0 }, delayMs);
      return { jobId: id };
    },

    async startWorker() {
      if (closed) throw new Error('The job queue is closed');
      started = true;
      pump();
    },

    drain(timeoutMs) {
      if (isIdle()) return Promise.resolve();
      const ms = drainTimeout(timeoutMs);
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
      const dropped = ready.length + timers.size;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      ready.length = 0;
      if (dropped > 0) log.warn({ dropped }, 'in-process queue closed with jobs still waiting; they are lost');
      await Promise.all([...running]);
      notifyIfIdle();
    },
  };
}
