import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true });

export const jobStates = ['queued', 'running', 'done', 'failed'] as const;
export type JobState = (typeof jobStates)[number];

/**
 * Every background job, recorded in the database: the source of truth. The queue (BullMQ or the
 * in-process one) only delivers `{id, delivery_id}`; a delivery whose id is not the row's current
 * `delivery_id` is stale and is dropped. A job is recorded in the same transaction as the change
 * that needs it (the outbox), delivered after commit, and re-delivered by the reconciler when its
 * delivery is missing, failed, or its lease ran out.
 */
export const backgroundJobs = pgTable(
  'background_jobs',
  {
    id: uuid('id').primaryKey(),
    name: text('name').notNull(),
    payload: jsonb('payload').notNull(),
    state: text('state', { enum: jobStates }).notNull().default('queued'),
    /** Runs started so far (claims); the retry budget is `max_attempts`. */
    attempts: integer('attempts').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    /** The current delivery; a fresh id for every re-delivery, so a stale one can be recognised. */
    deliveryId: uuid('delivery_id').notNull(),
    /**
     * When the current delivery was handed to the queue (set when it is recorded, as its dispatch
     * follows at once); null when that dispatch failed: the outbox mark the reconciler looks for.
     */
    deliveredAt: ts('delivered_at'),
    /** When the reconciler last found the delivery alive on the queue. */
    checkedAt: ts('checked_at'),
    /** Not before: the backoff of a retry, or a requested delay. */
    runAfter: ts('run_after').notNull().defaultNow(),
    /** While running: the worker renews this; once it has passed, the run is presumed dead. */
    leaseUntil: ts('lease_until'),
    workerId: text('worker_id'),
    /** The request that recorded the job, for the logs of its outcome. */
    requestId: text('request_id'),
    /** W3C `traceparent` of the span that recorded the job (when tracing is on), so its run joins the trace. */
    traceParent: text('trace_parent'),
    /** The last failure, for operators (users see the domain's own message). */
    lastError: text('last_error'),
    /** Times the reconciler had to deliver this job again. */
    redriven: integer('redriven').notNull().default(0),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    finishedAt: ts('finished_at'),
  },
  (t) => [
    index('background_jobs_open_idx').on(t.state, t.runAfter).where(sql`${t.state} in ('queued', 'running')`),
    // For the retention clean-up; partial, so recording a job does not write to it.
    index('background_jobs_finished_idx').on(t.finishedAt).where(sql`${t.finishedAt} is not null`),
    index('background_jobs_failed_idx').on(t.name).where(sql`${t.state} = 'failed'`),
    check('background_jobs_state_check', sql`${t.state} in ('queued', 'running', 'done', 'failed')`),
  ],
);

/** One row per process that runs jobs, renewed every few seconds: "live workers" for /readyz and /metrics. */
export const workerHeartbeats = pgTable('worker_heartbeats', {
  id: text('id').primaryKey(),
  hostname: text('hostname').notNull(),
  pid: integer('pid').notNull(),
  concurrency: integer('concurrency').notNull(),
  startedAt: ts('started_at').notNull().defaultNow(),
  lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
});
