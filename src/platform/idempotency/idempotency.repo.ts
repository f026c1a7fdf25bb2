import { and, eq, type SQL, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { idempotencyKeys } from './idempotency.table.js';

/*
 * Queries of the `Idempotency-Key` records. All times come from the database's clock (now()),
 * never from a process's, so API processes with skewed clocks agree on expiry and abandonment.
 *
 * A claim is identified by the exact `created_at` it was given (returned as text, which keeps the
 * microseconds a JavaScript Date would lose): a request only completes or releases the row it
 * claimed, never one that another request took over after it was abandoned.
 */

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface KeyState {
  fingerprint: string;
  state: 'in_progress' | 'completed';
  /** Set when `state` is `completed`. */
  response: StoredResponse | null;
  /** A completed row past `expires_at`, or an in-progress row not touched for `abandonAfterSeconds`: free to take. */
  takeable: boolean;
}

const seconds = (n: number) => sql`(${Math.round(n)})::integer * interval '1 second'`;

/** Rows a new request may overwrite (and cleanup may delete): expired responses and abandoned claims. */
function takeable(abandonAfterSeconds: number): SQL {
  const t = idempotencyKeys;
  return sql`((${t.state} = 'completed' AND ${t.expiresAt} <= now())
    OR (${t.state} = 'in_progress' AND ${t.updatedAt} < now() - ${seconds(abandonAfterSeconds)}))`;
}

/**
 * Claims `key` for a request: inserts an `in_progress` row, or takes over a row that is
 * takeable, in one statement (concurrent claimers serialise on the primary key and only one
 * gets a row back). Returns the claim token, or undefined when someone else holds the key.
 */
export async function claimKey(
  db: DbOrTx,
  claim: { userId: number; key: string; fingerprint: string; ttlSeconds: number; abandonAfterSeconds: number },
): Promise<string | undefined> {
  const t = idempotencyKeys;
  const fresh = {
    fingerprint: claim.fingerprint,
    state: 'in_progress' as const,
    responseStatus: null,
    responseHeaders: null,
    responseBody: null,
    createdAt: sql`now()`,
    updatedAt: sql`now()`,
    expiresAt: sql`now() + ${seconds(claim.ttlSeconds)}`,
  };
  const [row] = await db
    .insert(t)
    .values({ userId: claim.userId, key: claim.key, ...fresh })
    .onConflictDoUpdate({ target: [t.userId, t.key], set: fresh, setWhere: takeable(claim.abandonAfterSeconds) })
    .returning({ token: sql<string>`${t.createdAt}::text` });
  return row?.token;
}

/** The current record of a key, with `takeable` judged by the database's clock. */
export async function findKey(db: DbOrTx, userId: number, key: string, abandonAfterSeconds: number): Promise<KeyState | undefined> {
  const t = idempotencyKeys;
  const [row] = await db
    .select({
      fingerprint: t.fingerprint,
      state: t.state,
      status: t.responseStatus,
      headers: t.responseHeaders,
      body: t.responseBody,
      takeable: sql<boolean>`${takeable(abandonAfterSeconds)}`,
    })
    .from(t)
    .where(and(eq(t.userId, userId), eq(t.key, key)));
  if (!row) return undefined;
  const completed = row.state === 'completed' && row.status !== null && row.body !== null;
  return {
    fingerprint: row.fingerprint,
    state: row.state,
    response: completed ? { status: row.status!, headers: row.headers ?? {}, body: row.body! } : null,
    takeable: row.takeable,
  };
}

function claimed(userId: number, key: string, token: string): SQL {
  const t = idempotencyKeys;
  return and(eq(t.userId, userId), eq(t.key, key), eq(t.state, 'in_progress'), sql`${t.createdAt} = ${token}::timestamptz`)!;
}

/** Stores the response of a claim and marks it completed; false when the claim was lost meanwhile. */
export async function completeKey(db: DbOrTx, userId: number, key: string, token: string, response: StoredResponse): Promise<boolean> {
  const t = idempotencyKeys;
  const rows = await db
    .update(t)
    .set({
      state: 'completed',
      responseStatus: response.status,
      responseHeaders: response.headers,
      responseBody: response.body,
      updatedAt: sql`now()`,
    })
    .where(claimed(userId, key, token))
    .returning({ key: t.key });
  return rows.length > 0;
}

/** Deletes a claim that produced no storable response, so the key can be used again. */
export async function releaseKey(db: DbOrTx, userId: number, key: string, token: string): Promise<void> {
  await db.delete(idempotencyKeys).where(claimed(userId, key, token));
}

/**
 * Deletes up to `limit` records that no request needs any more: completed ones past their
 * `expires_at` and in-progress ones abandoned by a crashed process. Returns how many it deleted;
 * call again while it returns `limit`.
 */
export async function deleteTakeableKeys(db: DbOrTx, limit: number, abandonAfterSeconds: number): Promise<number> {
  const t = idempotencyKeys;
  // The condition is repeated outside the sub-select: a row taken over by a new request after
  // the sub-select ran is re-checked against its new version and kept.
  const rows = await db
    .delete(t)
    .where(
      and(
        sql`(${t.userId}, ${t.key}) IN (SELECT ${t.userId}, ${t.key} FROM ${t} WHERE ${takeable(abandonAfterSeconds)} LIMIT ${limit})`,
        takeable(abandonAfterSeconds),
      ),
    )
    .returning({ key: t.key });
  return rows.length;
}
