import { sql } from 'drizzle-orm';
import { type DbOrTx, type StatementParam } from '../../db/client.js';
import { newId } from '../../db/columns.js';
import { type InboxParts, type InboxRecord, inboxStatement } from './webhook/inbox.repo.js';
import type { WebhookOutcome } from './webhook/webhook.schemas.js';
import { accessGrantingStatuses, billingCustomers, endedStatuses, type subscriptions } from './billing.table.js';

/**
 * Writes of the locally mirrored customers and subscriptions (with their items). Every mirrored
 * object carries `last_event_at`, the `created` time of the newest event applied to it; writes
 * that would go back in time are refused by the SQL itself, so concurrent deliveries cannot undo
 * each other.
 */

export type SubscriptionRow = typeof subscriptions.$inferSelect;
const granting = [...accessGrantingStatuses];

/** Inserts the customer account record; undefined when the user already has one (a concurrent checkout). */
export async function insertCustomer(db: DbOrTx, values: { providerCustomerId: string; userId: number }) {
  const [row] = await db.insert(billingCustomers).values(values).onConflictDoNothing().returning();
  return row;
}

export type SubscriptionFields = Omit<
  typeof subscriptions.$inferInsert,
  'id' | 'workspaceId' | 'createdAt' | 'updatedAt'
>;

export interface ItemValues {
  providerItemId: string;
  providerPriceId: string;
  providerProductId: string | null;
  quantity: number;
}

/** A subscription event, as the mirror (webhook/subscription.mirror.ts) derived it from the payload. */
export interface SubscriptionEvent {
  fields: SubscriptionFields;
  items: ItemValues[];
  /** metadata.workspace_id when it is a UUID (the workspace named at checkout). */
  namedWorkspaceId: string | null;
  /** The event's status ends the subscription for good (canceled, incomplete_expired). */
  endsNow: boolean;
  /** The event's status grants access (active, trialing, past_due). */
  grantsNow: boolean;
}

/** What the event's statement decided and did. */
export interface SubscriptionEventResult {
  /** From the statement's snapshot: `duplicate` when the inbox held a final outcome already. */
  decision: WebhookOutcome | 'duplicate';
  /** The inbox's outcome for a duplicate. */
  previous: WebhookOutcome | null;
  /** The inbox row was written with `decision` (false: a concurrent delivery recorded the event first). */
  recorded: boolean;
  /** The subscription was written (`applied`); false with `applied`: a concurrent event changed it first. */
  written: boolean;
  /** The workspace it was on before (from the snapshot). */
  previousWorkspace: string | null;
  /** The workspace it was to go on, and the one it is on now. */
  target: string | null;
  workspaceId: string | null;
  /** The access-granting subscription that kept it off `target`. */
  holder: string | null;
  /** A waiting subscription attached to the workspace this one freed. */
  waiting: string | null;
}

const grantingList = sql.raw(granting.map((status) => `'${status}'`).join(', '));
const endedList = sql.raw(endedStatuses.map((status) => `'${status}'`).join(', '));
const ts = (date: Date | null | undefined) => (date ? date.toISOString() : null);

/** The statement's result row (see SubscriptionEventResult). */
interface SubscriptionEventRow {
  decision: WebhookOutcome | 'duplicate';
  previous: WebhookOutcome | null;
  recorded: boolean;
  written: boolean;
  previous_workspace: string | null;
  target: string | null;
  workspace_id: string | null;
  holder: string | null;
  waiting: string | null;
}

/** The statement of applySubscriptionEvent, composed once per inbox mode. */
const subscriptionEventSql = (p: StatementParam, inbox: InboxParts) =>
  sql`WITH cur AS (
        SELECT id, status, workspace_id, last_event_at, xmin AS version FROM subscriptions
        WHERE provider_subscription_id = ${p('subscription')}::text
      ),
      facts AS (
        SELECT ${inbox.previous} AS previous,
          EXISTS (SELECT 1 FROM billing_customers c WHERE c.provider_customer_id = ${p('customer')}::text) AS customer_exists,
          (${p('named')}::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = ${p('named')}::uuid)) AS named_exists,
          cur.id, cur.status, cur.workspace_id, cur.last_event_at, cur.version
        FROM (SELECT 1) AS one LEFT JOIN cur ON true
      ),
      decision AS (
        SELECT facts.*,
          CASE
            WHEN coalesce(previous <> 'failed', false) THEN 'duplicate'
            WHEN NOT customer_exists THEN 'skipped'
            WHEN id IS NOT NULL AND status IN (${endedList}) AND NOT ${p('endsNow')}::boolean THEN 'ignored'
            WHEN id IS NOT NULL AND ${p('lastEventAt')}::timestamptz < last_event_at AND NOT (${p('endsNow')}::boolean AND status NOT IN (${endedList})) THEN 'stale'
            ELSE 'applied'
          END AS outcome,
          coalesce(workspace_id, CASE WHEN named_exists THEN ${p('named')}::uuid END) AS target
        FROM facts
      ),
      holder AS (
        SELECT s.provider_subscription_id FROM subscriptions s, decision d
        WHERE d.outcome = 'applied' AND s.workspace_id = d.target AND s.status IN (${grantingList}) AND s.id IS DISTINCT FROM d.id
        LIMIT 1
      ),
      placed AS (
        SELECT d.id, d.version,
          CASE WHEN d.target IS NULL THEN NULL
            WHEN (d.target = d.workspace_id AND NOT ${p('grantsNow')}::boolean) OR NOT EXISTS (SELECT 1 FROM holder) THEN d.target
          END AS place
        FROM decision d WHERE d.outcome = 'applied'
      ),
      upd AS (
        UPDATE subscriptions s SET provider_customer_id = ${p('customer')}::text, status = ${p('status')}::text,
          current_period_start = ${p('currentPeriodStart')}::timestamptz, current_period_end = ${p('currentPeriodEnd')}::timestamptz,
          billing_cycle_anchor = ${p('billingCycleAnchor')}::timestamptz, trial_start = ${p('trialStart')}::timestamptz, trial_end = ${p('trialEnd')}::timestamptz,
          cancel_at = ${p('cancelAt')}::timestamptz, cancel_at_period_end = ${p('cancelAtPeriodEnd')}::boolean, canceled_at = ${p('canceledAt')}::timestamptz,
          ended_at = ${p('endedAt')}::timestamptz, metadata = ${p('metadata')}::jsonb, last_event_at = ${p('lastEventAt')}::timestamptz,
          updated_at = ${p('now')}::timestamptz, workspace_id = p.place
        FROM placed p
        WHERE s.id = p.id AND s.xmin = p.version
        RETURNING s.id, s.workspace_id
      ),
      ins AS (
        INSERT INTO subscriptions (id, provider_subscription_id, provider_customer_id, status, current_period_start,
          current_period_end, billing_cycle_anchor, trial_start, trial_end, cancel_at, cancel_at_period_end, canceled_at,
          ended_at, metadata, last_event_at, workspace_id)
        SELECT ${p('newId')}::uuid, ${p('subscription')}::text, ${p('customer')}::text, ${p('status')}::text, ${p('currentPeriodStart')}::timestamptz,
          ${p('currentPeriodEnd')}::timestamptz, ${p('billingCycleAnchor')}::timestamptz, ${p('trialStart')}::timestamptz, ${p('trialEnd')}::timestamptz, ${p('cancelAt')}::timestamptz, ${p('cancelAtPeriodEnd')}::boolean,
          ${p('canceledAt')}::timestamptz, ${p('endedAt')}::timestamptz, ${p('metadata')}::jsonb, ${p('lastEventAt')}::timestamptz, p.place
        FROM placed p WHERE p.id IS NULL
        ON CONFLICT (provider_subscription_id) DO NOTHING
        RETURNING id, workspace_id
      ),
      sub AS (SELECT id, workspace_id FROM upd UNION ALL SELECT id, workspace_id FROM ins),
      removed AS (DELETE FROM subscription_items WHERE subscription_id IN (SELECT id FROM upd)),
      added AS (
        INSERT INTO subscription_items (id, subscription_id, provider_item_id, provider_price_id, provider_product_id, quantity)
        SELECT i.id, sub.id, i.item, i.price, i.product, i.quantity
        FROM sub, jsonb_to_recordset(${p('items')}::jsonb) AS i(id uuid, item text, price text, product text, quantity integer)
      ),
      waiting AS (
        UPDATE subscriptions w SET workspace_id = d.workspace_id
        FROM decision d
        WHERE d.workspace_id IS NOT NULL AND d.status IN (${grantingList})
          AND EXISTS (SELECT 1 FROM sub WHERE NOT (sub.workspace_id IS NOT DISTINCT FROM d.workspace_id AND ${p('grantsNow')}::boolean))
          AND w.id = (
            SELECT o.id FROM subscriptions o
            WHERE o.workspace_id IS NULL AND o.status IN (${grantingList}) AND o.metadata->>'workspace_id' = d.workspace_id::text
              AND o.id <> d.id
            ORDER BY o.last_event_at DESC, o.provider_subscription_id ASC
            LIMIT 1
          )
          AND w.workspace_id IS NULL AND w.status IN (${grantingList})
          AND EXISTS (SELECT 1 FROM workspaces ws WHERE ws.id = d.workspace_id)
          AND NOT EXISTS (
            SELECT 1 FROM subscriptions o WHERE o.workspace_id = d.workspace_id AND o.status IN (${grantingList}) AND o.id <> d.id
          )
        RETURNING w.provider_subscription_id
      ),
      ${inbox.record(
        sql`(SELECT outcome FROM decision)`,
        sql`(SELECT outcome FROM decision) IN ('skipped', 'ignored', 'stale') OR EXISTS (SELECT 1 FROM sub)`,
      )}
      SELECT d.outcome AS decision, d.previous, EXISTS (SELECT 1 FROM recorded) AS recorded, EXISTS (SELECT 1 FROM sub) AS written,
        d.workspace_id AS previous_workspace, d.target, (SELECT workspace_id FROM sub) AS workspace_id,
        (SELECT provider_subscription_id FROM holder) AS holder, (SELECT provider_subscription_id FROM waiting) AS waiting
      FROM decision d`;
const subscriptionEventStatement = inboxStatement<SubscriptionEventRow>(subscriptionEventSql);

/**
 * A subscription event in one statement, without an explicit transaction (a statement is atomic):
 * reads the inbox, the customer account record, the subscription and the named workspace,
 * decides the outcome under the ordering rules (webhook.service.ts), and when it applies writes
 * every field (insert, or update), recreates the items, puts it on its workspace (the one it is
 * on, else the one named, unless another access-granting subscription holds it; an attached one
 * that grants nothing stays), hands a freed workspace to a waiting subscription, and records the
 * event in the inbox with its outcome (`inbox`).
 *
 * Concurrency: every read is the statement's snapshot, so the write is a compare-and-set: the
 * update applies only to the row version that was read (`xmin`; PostgreSQL re-checks it on the
 * newest version after waiting for a concurrent writer's lock) and the insert only when no row
 * appeared meanwhile. When a concurrent event changed or created the subscription first, nothing
 * at all is written (`applied` with `written` false) and the caller runs the statement again on a
 * fresh snapshot. Throws the unique violation of ONE_GRANTING_INDEX when a concurrent statement
 * attached another access-granting subscription to the workspace: run it again, too.
 */
export async function applySubscriptionEvent(
  db: DbOrTx,
  inbox: InboxRecord,
  event: SubscriptionEvent,
): Promise<SubscriptionEventResult> {
  const f = event.fields;
  const items = JSON.stringify(
    event.items.map((item) => ({ id: newId(), item: item.providerItemId, price: item.providerPriceId, product: item.providerProductId, quantity: item.quantity })),
  );
  const [row] = await subscriptionEventStatement(db, inbox, {
    subscription: f.providerSubscriptionId,
    customer: f.providerCustomerId,
    named: event.namedWorkspaceId,
    endsNow: event.endsNow,
    grantsNow: event.grantsNow,
    status: f.status,
    currentPeriodStart: ts(f.currentPeriodStart),
    currentPeriodEnd: ts(f.currentPeriodEnd),
    billingCycleAnchor: ts(f.billingCycleAnchor),
    trialStart: ts(f.trialStart),
    trialEnd: ts(f.trialEnd),
    cancelAt: ts(f.cancelAt),
    cancelAtPeriodEnd: f.cancelAtPeriodEnd ?? false,
    canceledAt: ts(f.canceledAt),
    endedAt: ts(f.endedAt),
    metadata: JSON.stringify(f.metadata ?? {}),
    lastEventAt: f.lastEventAt.toISOString(),
    now: new Date().toISOString(),
    newId: newId(),
    items,
  });
  return {
    decision: row!.decision,
    previous: row!.previous,
    recorded: row!.recorded,
    written: row!.written,
    previousWorkspace: row!.previous_workspace,
    target: row!.target,
    workspaceId: row!.workspace_id,
    holder: row!.holder,
    waiting: row!.waiting,
  };
}

export const ONE_GRANTING_INDEX = 'subscriptions_one_granting_per_workspace';

