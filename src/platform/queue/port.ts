import type { z } from 'zod';

export interface JobContext {
  /** The caller's idempotency key, or a generated id. */
  jobId: string;
  /** 1 on the first run, 2 on the first retry, ... */
  attempt: number;
  /** True when this run is the last one allowed (the handler may mark its work failed). */
  isFinalAttempt: boolean;
}

/**
 * One background job: its name, payload schema, handler and retry policy, declared once
 * (with `defineJob`). Payloads are JSON: they are validated on enqueue and again before
 * the handler runs, so a handler only ever sees `z.output<Schema>`.
 */
export interface JobDefinition<Name extends string = string, Schema extends z.ZodType = z.ZodType> {
  /** Lower-case letters, digits, `.`, `_` and `-`; starts with a letter. */
  readonly name: Name;
  readonly payload: Schema;
  // Method syntax on purpose: a definition with a narrower payload still fits `JobDefinition`.
  handler(payload: z.output<Schema>, context: JobContext): Promise<void>;
  /** Total runs including the first (default 3). */
  readonly attempts?: number;
  /** Base delay of the exponential backoff: retry n waits backoffMs * 2^(n-1) (default 1000 ms). */
  readonly backoffMs?: number;
}

export interface EnqueueOptions {
  /**
   * Idempotency key, scoped to the job name: enqueueing the same id again while the first job
   * is pending, or within the retention window after it finished, is a no-op.
   */
  jobId?: string;
  /** Run no earlier than this many milliseconds from now. */
  delayMs?: number;
}

export interface JobQueue {
  readonly kind: 'memory' | 'bullmq';
  /** Declares a job; every job is registered before `startWorker` and before it is enqueued. */
  register(definition: JobDefinition): void;
  /** Validates the payload with the job's schema (throws JobPayloadError) and stores the job. */
  enqueue(name: string, payload: unknown, options?: EnqueueOptions): Promise<{ jobId: string }>;
  /** Starts processing jobs in this process (at most WORKER_CONCURRENCY at once). */
  startWorker(): Promise<void>;
  /** Resolves when no job is waiting, delayed (retries included) or running; rejects after timeoutMs. */
  drain(timeoutMs?: number): Promise<void>;
  ping(): Promise<void>;
  /** Stops taking jobs and waits for the running ones to finish. */
  close(): Promise<void>;
}
