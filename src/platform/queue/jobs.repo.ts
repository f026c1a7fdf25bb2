import { and, eq, inArray, isNotNull, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows } from '../../db/client.js';
import { backgroundJobs, type JobState, workerHeartbeats } from './jobs.table.js';

/**
 * Data access of the job system. Every change of a job's state is a conditional update on its
 * current `delivery_id` (and state), so two processes acting on the same job never both win:
 * the loser's update matches no row. Times come from the database (`now()`), never from a
 * process clock, so leases mean the same to every worker.
 */

export type JobRow = typeof backgroundJobs.$inferSelect;

const secondsFromNow = (seconds: number) => sql`now() + make_interval(secs => ${seconds})`;
const secondsAgo = (seconds: number) => sql`now() - make_interval(secs => ${seconds})`;

export async function insertJob(
  db: DbOrTx,
  values: {
    id: string;
    name: string;
    payload: unknown;
    maxAttempts: number;
    deliveryId: string;
    delayMs: number;
    requestId: string | null;
    traceParent?: string | null;
  },
): Promise<boolean> {
  const rows = await db
    .insert(backgroundJobs)
    .values({
      id: values.id,
      name: values.name,
      payload: values.payload,
      maxAttempts: values.maxAttempts,
      deliveryId: values.deliveryId,
      requestId: values.requestId,
      traceParent: values.traceParent ?? null,
      runAfter: secondsFromNow(values.delayMs / 1000),
      // Optimistic: the dispatch after commit follows; only a failed one clears it (one write
      // less on the request path). A process that dies in between leaves a delivery the queue
      // never had, which the reconciler finds after JOB_DELIVERY_GRACE_SECONDS.
      deliveredAt: sql`now()`,
    })
    .onConflictDoNothing({ target: backgroundJobs.id })
    .returning({ id: backgroundJobs.id });
  return rows.length > 0;
}

export async function findJob(db: DbOrTx, id: string): Promise<JobRow | undefined> {
  const [row] = await db.select().from(backgroundJobs).where(eq(backgroundJobs.id, id));
  return row;
}

/** Milliseconds until the job may run (0 when due). */
export async function delayOf(db: DbOrTx, id: string): Promise<number> {
  const [row] = await queryRows<{ ms: number }>(
    db,
    sql`SELECT greatest(0, extract(epoch FROM ${backgroundJobs.runAfter} - now()) * 1000)::float8 AS ms FROM ${backgroundJobs} WHERE ${backgroundJobs.id} = ${id}`,
  );
  return row ? Math.ceil(row.ms) : 0;
}

/** The reconciler handed a delivery that had failed to the queue. */
export async function markDelivered(db: DbOrTx, id: string, deliveryId: string): Promise<void> {
  await db
    .update(backgroundJobs)
    .set({ deliveredAt: sql`now()`, checkedAt: null })
    .where(and(eq(backgroundJobs.id, id), eq(backgroundJobs.deliveryId, deliveryId), eq(backgroundJobs.state, 'queued')));
}

/** The dispatch after commit failed: the outbox mark is set, so the reconciler delivers it soon. */
export async function markUndelivered(db: DbOrTx, id: string, deliveryId: string): Promise<void> {
  await db
    .update(backgroundJobs)
    .set({ deliveredAt: null, updatedAt: sql`now()` })
    .where(and(eq(backgroundJobs.id, id), eq(backgroundJobs.deliveryId, deliveryId), eq(backgroundJobs.state, 'queued')));
}

/** Takes a queued job for this delivery: `running` under a lease. Undefined for a stale or duplicate delivery. */
export async function claimJob(db: DbOrTx, id: string, deliveryId: string, workerId: string, leaseSeconds: number): Promise<JobRow | undefined> {
  const [row] = await db
    .update(backgroundJobs)
    .set({
      state: 'running',
      attempts: sql`${backgroundJobs.attempts} + 1`,
      leaseUntil: secondsFromNow(leaseSeconds),
      workerId,
      updatedAt: sql`now()`,
    })
    .where(and(eq(backgroundJobs.id, id), eq(backgroundJobs.deliveryId, deliveryId), eq(backgroundJobs.state, 'queued')))
    .returning();
  return row;
}

/** Extends the lease of a run; false when the run no longer owns the job. */
export async function renewLease(db: DbOrTx, id: string, deliveryId: string, leaseSeconds: number): Promise<boolean> {
  const rows = await db
    .update(backgroundJobs)
    .set({ leaseUntil: secondsFromNow(leaseSeconds) })
    .where(and(eq(backgroundJobs.id, id), eq(backgroundJobs.deliveryId, deliveryId), eq(backgroundJobs.state, 'running')))
    .returning({ id: backgroundJobs.id });
  return rows.length > 0;
}

interface From {
  deliveryId: string;
  state: JobState;
}

const matches = (id: string, from: From) =>
  and(eq(backgroundJobs.id, id), eq(backgroundJobs.deliveryId, from.deliveryId), eq(backgroundJobs.state, from.state));

export async function completeJob(db: DbOrTx, id: string, deliveryId: string): Promise<boolean> {
  const rows = await db
    .update(backgroundJobs)
    .set({ state: 'done', leaseUntil: null, lastError: null, finishedAt: sql`now()`, updatedAt: sql`now()` })
    .where(matches(id, { deliveryId, state: 'running' }))
    .returning({ id: backgroundJobs.id });
  return rows.length > 0;
}

export async function failJob(db: DbOrTx, id: string, from: From, lastError: string): Promise<JobRow | undefined> {
  const [row] = await db
    .update(backgroundJobs)
    .set({ state: 'failed', leaseUntil: null, lastError, finishedAt: sql`now()`, updatedAt: sql`now()` })
    .where(matches(id, from))
    .returning();
  return row;
}

/** Queues the job again under a fresh delivery id (a retry, or a re-drive of a lost or dead run). */
export async function requeueJob(
  db: DbOrTx,
  id: string,
  from: From,
  to: { deliveryId: string; delayMs: number; lastError?: string; redrive: boolean; resetAttempts?: boolean },
): Promise<JobRow | undefined> {
  const [row] = await db
    .update(backgroundJobs)
    .set({
      state: 'queued',
      finishedAt: null,
      // An operator's re-drive of a failed job grants it a fresh retry budget.
      ...(to.resetAttempts ? { attempts: 0 } : {}),
      deliveryId: to.deliveryId,
      // As when recorded: the dispatch follows at once; a failed one clears it.
      deliveredAt: sql`now()`,
      checkedAt: null,
      leaseUntil: null,
      runAfter: secondsFromNow(to.delayMs / 1000),
      ...(to.lastError !== undefined ? { lastError: to.lastError } : {}),
      ...(to.redrive ? { redriven: sql`${backgroundJobs.redriven} + 1` } : {}),
      updatedAt: sql`now()`,
    })
    .where(matches(id, from))
    .returning();
  return row;
}

/**
 * What an operator looks at: `failed` jobs, or `stuck` ones (queued or running with no change for
 * `olderThanMinutes`: a lost delivery, a dead run, no worker), newest change first.
 */
export async function listJobsFor(
  db: DbOrTx,
  filter: { which: 'stuck' | 'failed' | 'all'; olderThanMinutes: number; name?: string; limit: number },
): Promise<JobRow[]> {
  const which =
    filter.which === 'failed'
      ? eq(backgroundJobs.state, 'failed')
      : filter.which === 'stuck'
        ? and(inArray(backgroundJobs.state, ['queued', 'running']), lte(backgroundJobs.updatedAt, secondsAgo(filter.olderThanMinutes * 60)))
        : undefined;
  return db
    .select()
    .from(backgroundJobs)
    .where(and(which, filter.name ? eq(backgroundJobs.name, filter.name) : undefined))
    .orderBy(sql`${backgroundJobs.updatedAt} DESC`, backgroundJobs.id)
    .limit(filter.limit);
}

/** Running jobs whose lease has run out: their worker died, hung or lost the database. */
export async function expiredRuns(db: DbOrTx, limit: number): Promise<JobRow[]> {
  return db
    .select()
    .from(backgroundJobs)
    .where(and(eq(backgroundJobs.state, 'running'), lt(backgroundJobs.leaseUntil, sql`now()`)))
    .limit(limit);
}

/** Queued jobs whose dispatch failed (the outbox mark is set). */
export async function undeliveredJobs(db: DbOrTx, olderThanSeconds: number, limit: number): Promise<JobRow[]> {
  return db
    .select()
    .from(backgroundJobs)
    .where(
      and(
        eq(backgroundJobs.state, 'queued'),
        isNull(backgroundJobs.deliveredAt),
        lte(backgroundJobs.updatedAt, secondsAgo(olderThanSeconds)),
      ),
    )
    .orderBy(backgroundJobs.runAfter)
    .limit(limit);
}

/** Delivered, due for a while, and not started: is the delivery still on the queue? */
export async function unconfirmedDeliveries(db: DbOrTx, graceSeconds: number, limit: number): Promise<JobRow[]> {
  const before = secondsAgo(graceSeconds);
  return db
    .select()
    .from(backgroundJobs)
    .where(
      and(
        eq(backgroundJobs.state, 'queued'),
        isNotNull(backgroundJobs.deliveredAt),
        lte(backgroundJobs.runAfter, before),
        or(and(isNull(backgroundJobs.checkedAt), lte(backgroundJobs.deliveredAt, before)), lte(backgroundJobs.checkedAt, before)),
      ),
    )
    .orderBy(sql`coalesce(${backgroundJobs.checkedAt}, ${backgroundJobs.deliveredAt})`)
    .limit(limit);
}

export async function markChecked(db: DbOrTx, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.update(backgroundJobs).set({ checkedAt: sql`now()` }).where(inArray(backgroundJobs.id, ids));
}

/** Ends the leases of runs owned by workers known to be dead, so the reconciler re-drives them now. */
export async function expireLeasesOf(db: DbOrTx, workerIds: string[]): Promise<number> {
  if (workerIds.length === 0) return 0;
  const rows = await db
    .update(backgroundJobs)
    .set({ leaseUntil: sql`now() - interval '1 second'` })
    .where(and(eq(backgroundJobs.state, 'running'), inArray(backgroundJobs.workerId, workerIds)))
    .returning({ id: backgroundJobs.id });
  return rows.length;
}

export async function deleteFinishedJobs(db: DbOrTx, retentionDays: number, limit = 5000): Promise<number> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`DELETE FROM ${backgroundJobs} WHERE ${backgroundJobs.id} IN (
      SELECT ${backgroundJobs.id} FROM ${backgroundJobs}
      WHERE ${backgroundJobs.finishedAt} < now() - make_interval(days => ${retentionDays}) LIMIT ${limit}
    ) RETURNING ${backgroundJobs.id}`,
  );
  return rows.length;
}

/** Jobs not yet finished (and failed ones still kept), by name and state: for metrics and `drain`. */
export interface JobCounts {
  name: string;
  waiting: number;
  delayed: number;
  active: number;
  failed: number;
  /** Seconds the oldest due job has waited; null when none waits. */
  oldestWaitingSeconds: number | null;
}

export async function jobCounts(db: DbOrTx): Promise<JobCounts[]> {
  const open = await queryRows<{ name: string; waiting: number; delayed: number; active: number; oldest: number | null }>(
    db,
    sql`SELECT ${backgroundJobs.name} AS name,
        count(*) FILTER (WHERE ${backgroundJobs.state} = 'queued' AND ${backgroundJobs.runAfter} <= now())::int AS waiting,
        count(*) FILTER (WHERE ${backgroundJobs.state} = 'queued' AND ${backgroundJobs.runAfter} > now())::int AS delayed,
        count(*) FILTER (WHERE ${backgroundJobs.state} = 'running')::int AS active,
        extract(epoch FROM now() - min(${backgroundJobs.runAfter}) FILTER (WHERE ${backgroundJobs.state} = 'queued' AND ${backgroundJobs.runAfter} <= now()))::float8 AS oldest
      FROM ${backgroundJobs} WHERE ${backgroundJobs.state} IN ('queued', 'running') GROUP BY ${backgroundJobs.name}`,
  );
  const failed = await queryRows<{ name: string; failed: number }>(
    db,
    sql`SELECT ${backgroundJobs.name} AS name, count(*)::int AS failed FROM ${backgroundJobs}
      WHERE ${backgroundJobs.state} = 'failed' GROUP BY ${backgroundJobs.name}`,
  );
  const byName = new Map<string, JobCounts>();
  const entry = (name: string) => {
    let counts = byName.get(name);
    if (!counts) byName.set(name, (counts = { name, waiting: 0, delayed: 0, active: 0, failed: 0, oldestWaitingSeconds: null }));
    return counts;
  };
  for (const row of open) {
    Object.assign(entry(row.name), {
      waiting: row.waiting,
      delayed: row.delayed,
      active: row.active,
      oldestWaitingSeconds: row.oldest === null ? null : Math.max(0, Number(row.oldest)),
    });
  }
  for (const row of failed) entry(row.name).failed = row.failed;
  return [...byName.values()];
}

export async function countUnfinished(db: DbOrTx): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(backgroundJobs)
    .where(inArray(backgroundJobs.state, ['queued', 'running']));
  return row?.n ?? 0;
}

// --- worker heartbeats ---------------------------------------------------------------------------

export async function beat(db: DbOrTx, worker: { id: string; hostname: string; pid: number; concurrency: number }): Promise<void> {
  await db
    .insert(workerHeartbeats)
    .values(worker)
    .onConflictDoUpdate({ target: workerHeartbeats.id, set: { lastSeenAt: sql`now()` } });
}

export async function removeHeartbeats(db: DbOrTx, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.delete(workerHeartbeats).where(inArray(workerHeartbeats.id, ids));
}

export async function heartbeatsOf(db: DbOrTx, hostname: string) {
  return db.select().from(workerHeartbeats).where(eq(workerHeartbeats.hostname, hostname));
}

export async function liveWorkerCount(db: DbOrTx, staleAfterSeconds: number): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(workerHeartbeats)
    .where(sql`${workerHeartbeats.lastSeenAt} > ${secondsAgo(staleAfterSeconds)}`);
  return row?.n ?? 0;
}

/** Heartbeats silent for a day belong to workers that are long gone. */
export async function deleteStaleHeartbeats(db: DbOrTx, olderThanSeconds = 86_400): Promise<void> {
  await db.delete(workerHeartbeats).where(lt(workerHeartbeats.lastSeenAt, secondsAgo(olderThanSeconds)));
}
