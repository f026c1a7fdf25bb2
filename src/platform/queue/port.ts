import type { z } from 'zod';
import type { DbOrTx } from '../../db/client.js';

// --- The transport: how a job reaches a worker ---------------------------------------------------

/** One delivery of a recorded job: the job's id and the delivery's own id (fresh for every re-delivery). */
export interface Delivery {
  name: string;
  jobId: string;
  deliveryId: string;
}

/** What the queue knows of a delivery; `missing` when it never arrived or is gone (Redis lost its data, a restart). */
export type DeliveryState = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed' | 'missing';

/**
 * The queue only delivers: it carries `{name, jobId, deliveryId}` to one worker, at least once.
 * Attempts, backoff, payloads and outcomes live in the database (`background_jobs`, see
 * job-system.ts), so losing the queue's data loses nothing that cannot be delivered again.
 */
export interface JobQueue {
  readonly kind: 'memory' | 'bullmq';
  /** Hands a delivery to the queue; the same deliveryId twice is one delivery while the queue remembers it. */
  deliver(delivery: Delivery, options?: { delayMs?: number }): Promise<void>;
  state(deliveryId: string): Promise<DeliveryState>;
  /** Starts running deliveries in this process with `handler`, at most WORKER_CONCURRENCY at once. */
  startWorker(handler: (delivery: Delivery) => Promise<void>): Promise<void>;
  /** Resolves when nothing is waiting, delayed or running on the queue; rejects after timeoutMs. */
  drain(timeoutMs?: number): Promise<void>;
  ping(): Promise<void>;
  /** Stops taking deliveries and waits for the running ones to finish. */
  close(): Promise<void>;
}

// --- Jobs: what the service declares -------------------------------------------------------------

export interface JobContext {
  /** The job's id (stable across attempts; the domain task's id where there is one). */
  jobId: string;
  /** 1 on the first run, 2 on the first retry, ... */
  attempt: number;
  /** True when this run is the last one allowed. */
  isFinalAttempt: boolean;
  /** Aborted when this run lost its lease (another worker took the job over) or the worker is closing hard. */
  signal: AbortSignal;
}

/** Why a job is being retried or given up. */
export interface JobFailure {
  /** `failed`: the handler threw; `lease_expired`: the worker running it died or hung; `invalid`: the payload no longer validates. */
  reason: 'failed' | 'lease_expired' | 'invalid';
  /** What was thrown (for `failed`), for the domain to choose the user-facing message. */
  error?: unknown;
}

/**
 * One background job: name, payload schema, handler and retry policy, declared once with
 * `defineJob` and listed in deps.ts. The handler must be idempotent (a job may run again after a
 * crash) and throws to fail; `UnrecoverableJobError` stops retrying. `onRetry` and `onGiveUp`
 * bring the domain's own status in line, in the same transaction that schedules the next attempt
 * or marks the job failed, so the two never disagree.
 */
export interface JobDefinition<Name extends string = string, Schema extends z.ZodType = z.ZodType> {
  /** Lower-case letters, digits, `.`, `_` and `-`; starts with a letter. */
  readonly name: Name;
  readonly payload: Schema;
  // Method syntax on purpose: a definition with a narrower payload still fits `JobDefinition`.
  handler(payload: z.output<Schema>, context: JobContext): Promise<void>;
  onRetry?(tx: DbOrTx, payload: z.output<Schema>, failure: JobFailure): Promise<void>;
  onGiveUp?(tx: DbOrTx, payload: z.output<Schema>, failure: JobFailure): Promise<void>;
  /**
   * An operator re-drives the job after it failed for good (admin CLI `tasks redrive`): the domain
   * reopens its status (a FAILURE task back to PENDING), in the transaction that queues it again.
   */
  onRedrive?(tx: DbOrTx, payload: z.output<Schema>): Promise<void>;
  /** Total runs including the first (default 3). */
  readonly attempts?: number;
  /** Base delay of the exponential backoff: retry n waits backoffMs * 2^(n-1) (default 1000 ms). */
  readonly backoffMs?: number;
  /**
   * Longest a run may take (default 15 minutes): past it the run's signal is aborted and the
   * attempt fails, so a handler stuck on a call that never answers cannot hold its job forever.
   */
  readonly timeoutMs?: number;
}

export interface RecordOptions {
  /**
   * The job's id (a UUID): recording the same id again is a no-op, so a domain task's id makes
   * its job idempotent. Default: a new UUID.
   */
  id?: string;
  /** Run no earlier than this many milliseconds from now. */
  delayMs?: number;
}

/** A recorded job, as `dispatch` needs it to deliver it. */
export interface RecordedJob {
  id: string;
  name: string;
  deliveryId: string;
  delayMs: number;
}
