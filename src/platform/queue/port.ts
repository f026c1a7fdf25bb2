import type { z } from 'zod';

export interface JobContext {
  jobId: string;
  /** 1 on the first run, 2 on the first retry, ... */
  attempt: number;
  /** True when this run is the last one allowed (the handler may mark its work failed). */
  isFinalAttempt: boolean;
}

/** One background job: its name, payload schema, handler and retry policy, declared once. */
export interface JobDefinition<Name extends string = string, Payload = unknown> {
  name: Name;
  payload: z.ZodType<Payload>;
  handler: (payload: Payload, context: JobContext) => Promise<void>;
  /** Total runs including the first (default 3). */
  attempts?: number;
  /** Base delay of the exponential backoff between runs (default 1000 ms). */
  backoffMs?: number;
}

export interface EnqueueOptions {
  /** Idempotency key: enqueueing the same id twice runs the job once. */
  jobId?: string;
  delayMs?: number;
}

export interface JobQueue {
  readonly kind: 'memory' | 'bullmq';
  enqueue(name: string, payload: unknown, options?: EnqueueOptions): Promise<{ jobId: string }>;
  /** Starts processing jobs in this process. */
  startWorker(): Promise<void>;
  /** Resolves when no job is waiting or running (tests, graceful shutdown). */
  drain(timeoutMs?: number): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
