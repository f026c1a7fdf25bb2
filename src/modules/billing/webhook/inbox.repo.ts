import { and, desc, eq, type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, preparedStatement, queryRows, type StatementParam, type StatementValue } from '../../../db/client.js';
import { webhookEvents } from '../billing.table.js';

/**
 * The webhook inbox (`webhook_events`): one row per provider event id, recorded with its outcome
 * by the statement that applies the event; kept payloads for replay, cleared after their retention.
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
 * The inbox's parts of a mirror's one statement (an event is one statement, without an explicit
 * transaction: docs/decisions.md, "Hot paths"), composed once per `mode` with the statement's
 * parameters (db/client.ts `preparedStatement`; their values: `inboxRecord`). `previous` is an
 * SQL expression, the event's outcome as recorded in the statement's snapshot (null: none;
 * `failed`: an earlier attempt failed, so this one may take over). `record(outcome, when)` is a
 * `WITH` entry named `recorded` that records the event with its final outcome when `when` holds,
 * returning its id: it inserts the event or takes over a `failed` attempt (attempts + 1); it
 * returns nothing when the event is already recorded with a final outcome, including by a
 * concurrent delivery that committed after the statement began (the insert waits on the primary
 * key for it). The mirror writes only when `previous` is not final and records the event in the
 * same statement, so a redelivery is a no-op. In a replay (no delivery), `previous` is null and
 * `record` sets the outcome of the event's existing row.
 */
export interface InboxParts {
  previous: SQL;
  record(outcome: SQL, when: SQL): SQL;
}

/** A delivery records the event it received; a replay re-applies a recorded one. */
export type InboxMode = 'delivery' | 'replay';

/** The inbox's side of one event's statement: which form, and the values of its parameters. */
export interface InboxRecord {
  mode: InboxMode;
  values: Record<string, StatementValue>;
}

export function inboxParts(mode: InboxMode, param: StatementParam): InboxParts {
  if (mode === 'replay') {
    return {
      previous: sql`NULL::text`,
      record: (outcome, when) =>
        sql`recorded AS (UPDATE webhook_events SET outcome = ${outcome}, error = NULL WHERE id = ${param('inboxId')}::text AND ${when} RETURNING id)`,
    };
  }
  return {
    previous: sql`(SELECT w.outcome FROM webhook_events w WHERE w.id = ${param('inboxId')}::text)`,
    record: (outcome, when) => sql`recorded AS (
      INSERT INTO webhook_events (id, type, created_at, outcome, attempts, payload)
      SELECT ${param('inboxId')}::text, ${param('inboxType')}::text, ${param('inboxCreatedAt')}::timestamptz, ${outcome}, 1, ${param('inboxPayload')}::text
      WHERE ${when}
      ON CONFLICT (id) DO UPDATE SET outcome = excluded.outcome, attempts = webhook_events.attempts + 1, error = NULL,
        received_at = ${param('inboxReceivedAt')}::timestamptz, payload = excluded.payload
      WHERE webhook_events.outcome = 'failed'
      RETURNING id
    )`,
  };
}

/**
 * A mirror's one statement, prepared once per inbox mode (`build` composes it around that mode's
 * inbox parts); a call runs the form its inbox record asks for, with the record's values and the
 * mirror's own.
 */
export function inboxStatement<Row>(build: (param: StatementParam, inbox: InboxParts) => SQL) {
  const byMode = {
    // Deliveries share transactions under load (group commit: one commit for several events);
    // each is one idempotent statement, as a batched statement must be (db/statement-batch.ts).
    delivery: preparedStatement<Row>((p) => build(p, inboxParts('delivery', p)), { batched: true }),
    replay: preparedStatement<Row>((p) => build(p, inboxParts('replay', p))),
  };
  return (db: DbOrTx, inbox: InboxRecord, values: Record<string, StatementValue>): Promise<Row[]> =>
    byMode[inbox.mode](db, [inbox.values, values]);
}

/** The inbox's values for event `id`: a delivery of `event`, or (null) a replay. */
export function inboxRecord(id: string, event: InboxEvent | null): InboxRecord {
  if (!event) return { mode: 'replay', values: { inboxId: id } };
  return {
    mode: 'delivery',
    values: {
      inboxId: event.id,
      inboxType: event.type,
      inboxCreatedAt: event.createdAt.toISOString(),
      inboxPayload: event.payload,
      inboxReceivedAt: new Date().toISOString(),
    },
  };
}

export async function findEvent(db: DbOrTx, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = await db.select().from(webhookEvents).where(eq(webhookEvents.id, id));
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
