import type { z } from 'zod';
import type { EnqueueOptions, JobContext, JobDefinition, JobQueue } from './port.js';

/**
 * Helpers shared by both queue adapters, plus the typed job list (`defineJob` + `createJobs`).
 * Keeping validation, defaults and backoff here is what makes the two adapters behave alike.
 */

export const DEFAULT_ATTEMPTS = 3;
export const DEFAULT_BACKOFF_MS = 1000;
/** How long a finished job's id is remembered, which bounds the idempotency window. */
export const COMPLETED_RETENTION_SECONDS = 24 * 3600;
export const FAILED_RETENTION_SECONDS = 7 * 24 * 3600;
const DEFAULT_DRAIN_TIMEOUT_MS = 60_000;

const JOB_NAME = /^[a-z][a-z0-9._-]{0,99}$/;
const MAX_JOB_ID_LENGTH = 256;

/** The payload does not match the job's schema (or is not JSON). A programming error: never retried. */
export class JobPayloadError extends Error {
  constructor(
    readonly jobName: string,
    readonly issues: z.core.$ZodIssue[] | string,
  ) {
    const detail = typeof issues === 'string' ? issues : issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    super(`Invalid payload for job ${jobName}: ${detail}`);
    this.name = 'JobPayloadError';
  }
}

/** Thrown by a handler (or by the runner) to fail a job at once, without further retries. */
export class UnrecoverableJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnrecoverableJobError';
  }
}

export interface ResolvedDefinition extends JobDefinition {
  readonly attempts: number;
  readonly backoffMs: number;
}

export function resolveDefinition(definition: JobDefinition): ResolvedDefinition {
  if (!JOB_NAME.test(definition.name)) {
    throw new Error(`Job name "${definition.name}" must match ${JOB_NAME}`);
  }
  const attempts = definition.attempts ?? DEFAULT_ATTEMPTS;
  const backoffMs = definition.backoffMs ?? DEFAULT_BACKOFF_MS;
  if (!Number.isInteger(attempts) || attempts < 1) throw new Error(`Job ${definition.name}: attempts must be an integer >= 1`);
  if (!Number.isFinite(backoffMs) || backoffMs < 0) throw new Error(`Job ${definition.name}: backoffMs must be >= 0`);
  return { ...definition, handler: definition.handler.bind(definition), attempts, backoffMs };
}

/** A registry of definitions by name, shared by the adapters' `register`. */
export class DefinitionMap {
  private readonly byName = new Map<string, ResolvedDefinition>();

  add(definition: JobDefinition): void {
    if (this.byName.has(definition.name)) throw new Error(`Job ${definition.name} is already registered`);
    this.byName.set(definition.name, resolveDefinition(definition));
  }

  get(name: string): ResolvedDefinition {
    const definition = this.byName.get(name);
    if (!definition) throw new Error(`Unknown job "${name}": register it before enqueueing`);
    return definition;
  }

  find(name: string): ResolvedDefinition | undefined {
    return this.byName.get(name);
  }
}

/**
 * Checks an enqueue call and returns the payload as it will be stored: a JSON copy, so that
 * both adapters refuse the same values (functions, Dates that the schema expects as Dates, ...)
 * at enqueue time rather than when the job runs.
 */
export function prepareEnqueue(
  definition: ResolvedDefinition,
  payload: unknown,
  options: EnqueueOptions,
): { data: unknown; delayMs: number } {
  let data: unknown;
  try {
    const json = JSON.stringify(payload);
    if (json === undefined) throw new Error('payload is not JSON-serialisable');
    data = JSON.parse(json);
  } catch (error) {
    throw new JobPayloadError(definition.name, error instanceof Error ? error.message : String(error));
  }
  const parsed = definition.payload.safeParse(data);
  if (!parsed.success) throw new JobPayloadError(definition.name, parsed.error.issues);
  if (options.jobId !== undefined && (options.jobId.length === 0 || options.jobId.length > MAX_JOB_ID_LENGTH)) {
    throw new Error(`jobId must be 1 to ${MAX_JOB_ID_LENGTH} characters`);
  }
  const delayMs = options.delayMs ?? 0;
  if (!Number.isFinite(delayMs) || delayMs < 0) throw new Error('delayMs must be >= 0');
  return { data, delayMs: Math.round(delayMs) };
}

/** Validates the stored payload again (the producer may run older or newer code) and runs the handler. */
export async function runHandler(definition: ResolvedDefinition, data: unknown, context: JobContext): Promise<void> {
  const parsed = definition.payload.safeParse(data);
  if (!parsed.success) {
    throw new UnrecoverableJobError(new JobPayloadError(definition.name, parsed.error.issues).message);
  }
  await definition.handler(parsed.data, context);
}

/** Delay before the run after `failedAttempt` (1-based); the same formula as BullMQ's exponential backoff. */
export function backoffDelay(backoffMs: number, failedAttempt: number): number {
  return Math.round(backoffMs * 2 ** (failedAttempt - 1));
}

export function drainTimeout(timeoutMs: number | undefined): number {
  return timeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// --- The typed job list --------------------------------------------------------------------

/** Declares a job; `const` keeps the literal name so `createJobs` can type `enqueue`. */
export function defineJob<const Name extends string, Schema extends z.ZodType>(
  definition: JobDefinition<Name, Schema>,
): JobDefinition<Name, Schema> {
  return definition;
}

export type AnyJobDefinition = JobDefinition<string, z.ZodType>;
export type JobName<Defs extends readonly AnyJobDefinition[]> = Defs[number]['name'];
/** What a caller passes to `enqueue` for job `N`: the schema's input type. */
export type JobPayload<Defs extends readonly AnyJobDefinition[], N extends JobName<Defs>> = z.input<
  Extract<Defs[number], { name: N }>['payload']
>;

export interface JobRegistry<Defs extends readonly AnyJobDefinition[]> {
  readonly queue: JobQueue;
  readonly names: ReadonlyArray<JobName<Defs>>;
  enqueue<N extends JobName<Defs>>(
    name: N,
    payload: JobPayload<Defs, N>,
    options?: EnqueueOptions,
  ): Promise<{ jobId: string }>;
}

/** Registers every definition on the queue and returns an `enqueue` typed by them. */
export function createJobs<const Defs extends readonly AnyJobDefinition[]>(
  queue: JobQueue,
  definitions: Defs,
): JobRegistry<Defs> {
  for (const definition of definitions) queue.register(definition);
  return {
    queue,
    names: definitions.map((d) => d.name),
    enqueue: (name, payload, options) => queue.enqueue(name, payload, options),
  };
}
