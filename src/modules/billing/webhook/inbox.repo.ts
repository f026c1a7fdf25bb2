import { and, desc, eq, type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows } from '../../../db/client.js';
import { webhookEvents } from '../billing.table.js';
import type { WebhookOutcome } from './webhook.schemas.js';

/**
 * The webhook inbox (`webhook_events`): one row per provider event id, claimed in the transaction
 * that applies the event and finished with its outcome; kept payloads for replay, cleared after
 * their retention.
 */

export type WebhookEventRow = typeof webhookEvents.$inferSelect;

export interface InboxEvent {
  id: string;
  type: string;
  createdAt: Date;
  /** The raw body to keep for replay; null when payloads are not kept (retention 0). */
  payload: string | null;
}

/**
 * Claims an event for processing inside the caller's transaction: inserts it, or takes over a
 * previous `failed` attempt (attempts + 1); a duplicate is an event already recorded with a final
 * outcome. A concurrent claim of the same id waits on the primary key until this transaction
 * ends, then sees the committed outcome. The placeholder outcome `failed` is never committed: the
 * mirror finishes the event (`finishCte`, `finishEvent`), or the transaction rolls back.
 *
 * The claim comes as parts of one statement, so a mirror claims the event and reads or writes its
 * object in a single round trip: `cte` is a `WITH` entry named `claim` (its rows: the
 * claimed id, none for a duplicate), `columns` the select-list entries `claimed` (boolean) and
 * `previous` (the recorded outcome of a duplicate, as committed when the statement started; null
 * when it committed later). Without an event (a replay, which locked its row with `lockEvent`),
 * the event counts as claimed.
 */
export interface ClaimParts {
  cte: SQL;
  columns: SQL;
}

export function claimParts(event: InboxEvent | null): ClaimParts {
  if (!event) return { cte: sql`claim AS (SELECT 1)`, columns: sql`true AS claimed, NULL::text AS previous` };
  const now = new Date().toISOString();
  return {
    cte: sql`claim AS (
      INSERT INTO webhook_events (id, type, created_at, outcome, attempts, payload)
      VALUES (${event.id}, ${event.type}, ${event.createdAt.toISOString()}::timestamptz, 'failed', 1, ${event.payload})
      ON CONFLICT (id) DO UPDATE SET attempts = webhook_events.attempts + 1, error = NULL,
        received_at = ${now}::timestamptz, payload = excluded.payload
      WHERE webhook_events.outcome = 'failed'
      RETURNING id
    )`,
    columns: sql`EXISTS (SELECT 1 FROM claim) AS claimed, (SELECT w.outcome FROM webhook_events w WHERE w.id = ${event.id}) AS previous`,
  };
}

/**
 * `finishEvent` as a `WITH` entry named `finish`, for the statement that writes the mirror (the
 * event was claimed by an earlier statement of the transaction); `when` gates it.
 */
export function finishCte(id: string, outcome: WebhookOutcome, when: SQL = sql`true`): SQL {
  return sql`finish AS (UPDATE webhook_events SET outcome = ${outcome}, error = NULL WHERE id = ${id} AND ${when})`;
}

export async function finishEvent(tx: DbOrTx, id: string, outcome: WebhookOutcome, error: string | null = null) {
  await tx.update(webhookEvents).set({ outcome, error }).where(eq(webhookEvents.id, id));
}

export async function findEvent(db: DbOrTx, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = await db.select().from(webhookEvents).where(eq(webhookEvents.id, id));
  return row;
}

/** The event's inbox row, locked until the transaction ends (a replay against a concurrent delivery). */
export async function lockEvent(tx: DbOrTx, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = await tx.select().from(webhookEvents).where(eq(webhookEvents.id, id)).for('update');
  return row;
}

/** Clears payloads received more than `retentionDays` ago (0: every one); returns how many. */
export async function clearOldPayloads(db: DbOrTx, retentionDays: number, limit = 5000): Promise<number> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`UPDATE ${webhookEvents} SET payload = NULL WHERE ${webhookEvents.id} IN (
      SELECT ${webhookEvents.id} FROM ${webhookEvents}
      WHERE ${webhookEvents.payload} IS NOT NULL AND ${webhookEvents.receivedAt} <= now() - make_interval(days => ${retentionDays})
      LIMIT ${limit}
    ) RETURNING ${webhookEvents.id}`,
  );
  return rows.length;
}

export interface WebhookEventSummary {
  id: string;
  type: string;
  createdAt: Date;
  receivedAt: Date;
  outcome: WebhookEventRow['outcome'];
  error: string | null;
  attempts: number;
  hasPayload: boolean;
}

/** The newest events first, optionally of one type or outcome (operators' list). */
export async function listEvents(
  db: DbOrTx,
  filter: { type?: string; outcome?: WebhookEventRow['outcome']; limit: number },
): Promise<WebhookEventSummary[]> {
  return db
    .select({
      id: webhookEvents.id,
      type: webhookEvents.type,
      createdAt: webhookEvents.createdAt,
      receivedAt: webhookEvents.receivedAt,
      outcome: webhookEvents.outcome,
      error: webhookEvents.error,
      attempts: webhookEvents.attempts,
      hasPayload: sql<boolean>`${webhookEvents.payload} IS NOT NULL`,
    })
    .from(webhookEvents)
    .where(
      and(
        filter.type ? eq(webhookEvents.type, filter.type) : undefined,
        filter.outcome ? eq(webhookEvents.outcome, filter.outcome) : undefined,
      ),
    )
    .orderBy(desc(webhookEvents.receivedAt), desc(webhookEvents.id))
    .limit(filter.limit);
}

/** Records an event type we do not handle; false when the id was already recorded. */
export async function recordUnhandled(db: DbOrTx, event: InboxEvent): Promise<boolean> {
  const rows = await db
    .insert(webhookEvents)
    .values({ id: event.id, type: event.type, createdAt: event.createdAt, outcome: 'unhandled', payload: event.payload })
    .onConflictDoNothing({ target: webhookEvents.id })
    .returning({ id: webhookEvents.id });
  return rows.length > 0;
}

/**
 * Records a failed attempt after its transaction rolled back. Never overwrites a final outcome
 * that a concurrent delivery of the same event committed meanwhile.
 */
export async function recordFailure(db: DbOrTx, event: InboxEvent, error: string): Promise<void> {
  await db
    .insert(webhookEvents)
    .values({ id: event.id, type: event.type, createdAt: event.createdAt, outcome: 'failed', error, attempts: 1, payload: event.payload })
    .onConflictDoUpdate({
      target: webhookEvents.id,
      set: { attempts: sql.raw('"webhook_events"."attempts" + 1'), error, receivedAt: new Date(), payload: event.payload },
      setWhere: sql.raw(`"webhook_events"."outcome" = 'failed'`),
    });
}
