import type { z } from 'zod';
import type { DbOrTx } from '../../db/client.js';
import { describeIssues } from '../zod-issues.js';
import type { JobDefinition, RecordedJob, RecordOptions } from './port.js';

/**
 * Declaring jobs (`defineJob`), the helpers both queue adapters and the job system share, and the
 * types of the typed job list.
 */

export const DEFAULT_ATTEMPTS = 3;
export const DEFAULT_BACKOFF_MS = 1000;
export const DEFAULT_TIMEOUT_MS = 15 * 60_000;

const JOB_NAME = /^[a-z][a-z0-9._-]{0,99}$/;

/** The payload does not match the job's schema (or is not JSON). A programming error: never retried. */
export class JobPayloadError extends Error {
  constructor(
    readonly jobName: string,
    readonly issues: z.core.$ZodIssue[] | string,
  ) {
    const detail = typeof issues === 'string' ? issues : describeIssues(issues);
    super(`Invalid payload for job ${jobName}: ${detail}`);
    this.name = 'JobPayloadError';
  }
}

/** Thrown by a handler to fail a job at once, without further retries. */
export class UnrecoverableJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnrecoverableJobError';
  }
}

export interface ResolvedDefinition extends JobDefinition {
  readonly attempts: number;
  readonly backoffMs: number;
  readonly timeoutMs: number;
}

/** A run took longer than its job's `timeoutMs`. */
export class JobTimeoutError extends Error {
  constructor(ms: number) {
    super(`The job run took longer than ${ms} ms`);
    this.name = 'JobTimeoutError';
  }
}

export function resolveDefinition(definition: JobDefinition): ResolvedDefinition {
  if (!JOB_NAME.test(definition.name)) {
    throw new Error(`Job name "${definition.name}" must match ${JOB_NAME}`);
  }
  const attempts = definition.attempts ?? DEFAULT_ATTEMPTS;
  const backoffMs = definition.backoffMs ?? DEFAULT_BACKOFF_MS;
  if (!Number.isInteger(attempts) || attempts < 1) throw new Error(`Job ${definition.name}: attempts must be an integer >= 1`);
  if (!Number.isFinite(backoffMs) || backoffMs < 0) throw new Error(`Job ${definition.name}: backoffMs must be >= 0`);
  const timeoutMs = definition.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new Error(`Job ${definition.name}: timeoutMs must be > 0`);
  return {
    ...definition,
    handler: definition.handler.bind(definition),
    onRetry: definition.onRetry?.bind(definition),
    onGiveUp: definition.onGiveUp?.bind(definition),
    onRedrive: definition.onRedrive?.bind(definition),
    attempts,
    backoffMs,
    timeoutMs,
  };
}

/**
 * Checks a payload before it is recorded and returns it as it will be stored: a JSON copy, so
 * that values JSON cannot carry are refused when the job is recorded, not when it runs.
 */
export function preparePayload(definition: ResolvedDefinition, payload: unknown): unknown {
  let data: unknown;
  try {
    const json = JSON.stringify(payload);
    if (json === undefined) throw new Error('payload is not JSON-serialisable');
    data = JSON.parse(json);
  } catch (error) {
    throw new JobPayloadError(definition.name, errorMessage(error));
  }
  const parsed = definition.payload.safeParse(data);
  if (!parsed.success) throw new JobPayloadError(definition.name, parsed.error.issues);
  return data;
}

/** Delay before the run after `failedAttempt` (1-based): backoffMs, then doubling. */
export function backoffDelay(backoffMs: number, failedAttempt: number): number {
  return Math.round(backoffMs * 2 ** (failedAttempt - 1));
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// --- The typed job list --------------------------------------------------------------------

/** Declares a job; `const` keeps the literal name so the job list can type `record` and `enqueue`. */
export function defineJob<const Name extends string, Schema extends z.ZodType>(
  definition: JobDefinition<Name, Schema>,
): JobDefinition<Name, Schema> {
  return definition;
}

export type AnyJobDefinition = JobDefinition<string, z.ZodType>;
export type JobName<Defs extends readonly AnyJobDefinition[]> = Defs[number]['name'];
/** What a caller passes for job `N`: the schema's input type. */
export type JobPayload<Defs extends readonly AnyJobDefinition[], N extends JobName<Defs>> = z.input<
  Extract<Defs[number], { name: N }>['payload']
>;

/**
 * Recording jobs, typed by the job list. Services receive this (or a narrower structural type
 * naming only the jobs they use) from the composition root.
 */
export interface JobRecorder<Defs extends readonly AnyJobDefinition[]> {
  /**
   * Records a job inside the caller's transaction (the outbox): it exists exactly when the change
   * that needs it commits. Deliver it after commit with `dispatch`; whatever is not delivered
   * then is delivered by the reconciler.
   */
  record<N extends JobName<Defs>>(tx: DbOrTx, name: N, payload: JobPayload<Defs, N>, options?: RecordOptions): Promise<RecordedJob>;
  /**
   * Delivers recorded jobs now, best effort and bounded in time; never rejects. A request need
   * not wait for it (`void jobs.dispatch(...)`): the job is recorded, so a slow or unreachable
   * queue only delays it.
   */
  dispatch(jobs: readonly RecordedJob[]): Promise<void>;
  /** Records in a transaction of its own, then dispatches. */
  enqueue<N extends JobName<Defs>>(name: N, payload: JobPayload<Defs, N>, options?: RecordOptions): Promise<RecordedJob>;
}

/**
 * The part of the job list a service needs, named by the service itself (no import of the list,
 * which would be circular): recording and dispatching the jobs in `Jobs` (name -> payload).
 */
export interface JobsFor<Jobs extends Record<string, unknown>> {
  record<N extends keyof Jobs & string>(tx: DbOrTx, name: N, payload: Jobs[N], options?: RecordOptions): Promise<RecordedJob>;
  dispatch(jobs: readonly RecordedJob[]): Promise<void>;
}
