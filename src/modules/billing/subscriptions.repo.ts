import { eq, type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows } from '../../db/client.js';
import { newId } from '../../db/columns.js';
import type { ClaimParts } from './webhook/inbox.repo.js';
import type { WebhookOutcome } from './webhook/webhook.schemas.js';
import { accessGrantingStatuses, billingCustomers, subscriptions } from './billing.table.js';

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

/** The subscription row, locked until the transaction ends. */
export async function lockSubscription(tx: DbOrTx, providerSubscriptionId: string): Promise<SubscriptionRow | undefined> {
  const [row] = await tx
    .select()
    .from(subscriptions)
    .where(eq(subscriptions.providerSubscriptionId, providerSubscriptionId))
    .for('update');
  return row;
}

/** What a subscription event's first statement learns, with its claim of the event. */
export interface SubscriptionEventState {
  claimed: boolean;
  /** A duplicate's recorded outcome (null: committed after the statement started). */
  previous: WebhookOutcome | null;
  customerExists: boolean;
  /** The subscription, locked until the transaction ends. */
  existing: Pick<SubscriptionRow, 'id' | 'status' | 'workspaceId' | 'lastEventAt'> | undefined;
  /** Whether the workspace named in metadata exists (false when none is named). */
  namedWorkspaceExists: boolean;
}

const grantingList = sql.raw(granting.map((status) => `'${status}'`).join(', '));
const ts = (date: Date | null | undefined) => (date ? date.toISOString() : null);

/**
 * One statement: claims the event (`claim`), and reads whether the customer account record
 * exists, the subscription (locked) and whether the named workspace exists.
 */
export async function claimSubscriptionEvent(
  tx: DbOrTx,
  claim: ClaimParts,
  keys: { providerSubscriptionId: string; providerCustomerId: string; namedWorkspaceId: string | null },
): Promise<SubscriptionEventState> {
  const [row] = await queryRows<{
    claimed: boolean;
    previous: WebhookOutcome | null;
    customer_exists: boolean;
    id: string | null;
    status: string | null;
    workspace_id: string | null;
    last_event_at: string | Date | null;
    named_exists: boolean;
  }>(
    tx,
    sql`WITH ${claim.cte}
      SELECT ${claim.columns},
        EXISTS (SELECT 1 FROM billing_customers c WHERE c.provider_customer_id = ${keys.providerCustomerId}) AS customer_exists,
        s.id, s.status, s.workspace_id, s.last_event_at,
        (${keys.namedWorkspaceId}::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = ${keys.namedWorkspaceId}::uuid)) AS named_exists
      FROM (SELECT 1) AS one
      LEFT JOIN (
        SELECT id, status, workspace_id, last_event_at FROM subscriptions
        WHERE provider_subscription_id = ${keys.providerSubscriptionId} FOR UPDATE
      ) AS s ON true`,
  );
  return {
    claimed: row!.claimed,
    previous: row!.previous,
    customerExists: row!.customer_exists,
    existing: row!.id
      ? { id: row!.id, status: row!.status!, workspaceId: row!.workspace_id, lastEventAt: new Date(row!.last_event_at!) }
      : undefined,
    namedWorkspaceExists: row!.named_exists,
  };
}

export interface SubscriptionWrite {
  /** The locked row to update; undefined inserts the subscription. */
  existingId: string | undefined;
  fields: SubscriptionFields;
  items: ItemValues[];
  /** The workspace to put it on, unless another access-granting subscription holds it. */
  target: string | null;
  /** Put it on `target` even when another one holds it (it grants nothing, so takes nothing away). */
  evenIfHeld: boolean;
  /** A `WITH` entry named `finish` (inbox.repo `finishCte`), run only when the write happened. */
  finish: (written: SQL) => SQL | null;
}

/**
 * One statement: every field (insert, or update of the locked row), the items recreated, the
 * workspace set (or none), and the caller's `finish` entry. `holder` is the access-granting
 * subscription that kept it off `target`. Undefined when the insert lost a race with another
 * event of the same subscription (nothing written). Throws the unique violation of
 * ONE_GRANTING_INDEX when a concurrent transaction attached another access-granting subscription.
 */
export async function writeSubscription(
  tx: DbOrTx,
  write: SubscriptionWrite,
): Promise<{ id: string; workspaceId: string | null; holder: string | null } | undefined> {
  const f = write.fields;
  const target = write.target;
  const self = write.existingId ?? null;
  const workspace = sql`CASE WHEN ${target}::uuid IS NULL THEN NULL
      WHEN ${write.evenIfHeld}::boolean OR NOT EXISTS (SELECT 1 FROM holder) THEN ${target}::uuid ELSE NULL END`;
  const values = {
    customer: f.providerCustomerId,
    status: f.status,
    currentPeriodStart: ts(f.currentPeriodStart),
    currentPeriodEnd: ts(f.currentPeriodEnd),
    billingCycleAnchor: ts(f.billingCycleAnchor),
    trialStart: ts(f.trialStart),
    trialEnd: ts(f.trialEnd),
    cancelAt: ts(f.cancelAt),
    canceledAt: ts(f.canceledAt),
    endedAt: ts(f.endedAt),
  };
  const metadata = JSON.stringify(f.metadata ?? {});
  const upsert = self
    ? sql`UPDATE subscriptions SET provider_customer_id = ${values.customer}, status = ${values.status},
          current_period_start = ${values.currentPeriodStart}::timestamptz, current_period_end = ${values.currentPeriodEnd}::timestamptz,
          billing_cycle_anchor = ${values.billingCycleAnchor}::timestamptz, trial_start = ${values.trialStart}::timestamptz,
          trial_end = ${values.trialEnd}::timestamptz, cancel_at = ${values.cancelAt}::timestamptz,
          cancel_at_period_end = ${f.cancelAtPeriodEnd ?? false}, canceled_at = ${values.canceledAt}::timestamptz,
          ended_at = ${values.endedAt}::timestamptz, metadata = ${metadata}::jsonb,
          last_event_at = ${f.lastEventAt.toISOString()}::timestamptz, updated_at = ${new Date().toISOString()}::timestamptz,
          workspace_id = ${workspace}
        WHERE id = ${self}::uuid
        RETURNING id, workspace_id`
    : sql`INSERT INTO subscriptions (id, provider_subscription_id, provider_customer_id, status, current_period_start,
          current_period_end, billing_cycle_anchor, trial_start, trial_end, cancel_at, cancel_at_period_end, canceled_at,
          ended_at, metadata, last_event_at, workspace_id)
        VALUES (${newId()}::uuid, ${f.providerSubscriptionId}, ${values.customer}, ${values.status},
          ${values.currentPeriodStart}::timestamptz, ${values.currentPeriodEnd}::timestamptz,
          ${values.billingCycleAnchor}::timestamptz, ${values.trialStart}::timestamptz, ${values.trialEnd}::timestamptz,
          ${values.cancelAt}::timestamptz, ${f.cancelAtPeriodEnd ?? false}, ${values.canceledAt}::timestamptz,
          ${values.endedAt}::timestamptz, ${metadata}::jsonb, ${f.lastEventAt.toISOString()}::timestamptz, ${workspace})
        ON CONFLICT (provider_subscription_id) DO NOTHING
        RETURNING id, workspace_id`;
  const items = JSON.stringify(
    write.items.map((item) => ({ id: newId(), item: item.providerItemId, price: item.providerPriceId, product: item.providerProductId, quantity: item.quantity })),
  );
  const finish = write.finish(sql`EXISTS (SELECT 1 FROM sub)`);
  const [row] = await queryRows<{ id: string | null; workspace_id: string | null; holder: string | null }>(
    tx,
    sql`WITH holder AS (
        SELECT provider_subscription_id FROM subscriptions
        WHERE ${target}::uuid IS NOT NULL AND workspace_id = ${target}::uuid AND status IN (${grantingList})
          AND id IS DISTINCT FROM ${self}::uuid
        LIMIT 1
      ),
      sub AS (${upsert}),
      removed AS (DELETE FROM subscription_items WHERE ${self}::uuid IS NOT NULL AND subscription_id = ${self}::uuid),
      added AS (
        INSERT INTO subscription_items (id, subscription_id, provider_item_id, provider_price_id, provider_product_id, quantity)
        SELECT i.id, sub.id, i.item, i.price, i.product, i.quantity
        FROM sub, jsonb_to_recordset(${items}::jsonb) AS i(id uuid, item text, price text, product text, quantity integer)
      )${finish ? sql`, ${finish}` : sql``}
      SELECT (SELECT id FROM sub) AS id, (SELECT workspace_id FROM sub) AS workspace_id,
        (SELECT provider_subscription_id FROM holder) AS holder`,
  );
  if (!row?.id) return undefined;
  return { id: row.id, workspaceId: row.workspace_id, holder: row.holder };
}

/**
 * One statement: puts the newest waiting subscription (access-granting, on no workspace, naming
 * the workspace in metadata: another one held it when it was processed; newest event first) on
 * the workspace when no access-granting subscription holds it; the one attached, if any. Throws the
 * unique violation of ONE_GRANTING_INDEX when a concurrent transaction attached one meanwhile.
 */
export async function attachWaitingSubscription(tx: DbOrTx, workspaceId: string): Promise<string | undefined> {
  const [row] = await queryRows<{ provider_subscription_id: string }>(
    tx,
    sql`UPDATE subscriptions SET workspace_id = ${workspaceId}::uuid
      WHERE id = (
          SELECT id FROM subscriptions
          WHERE workspace_id IS NULL AND status IN (${grantingList}) AND metadata->>'workspace_id' = ${workspaceId}
          ORDER BY last_event_at DESC, provider_subscription_id ASC
          LIMIT 1
        )
        AND workspace_id IS NULL AND status IN (${grantingList})
        AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = ${workspaceId}::uuid)
        AND NOT EXISTS (SELECT 1 FROM subscriptions o WHERE o.workspace_id = ${workspaceId}::uuid AND o.status IN (${grantingList}))
      RETURNING provider_subscription_id`,
  );
  return row?.provider_subscription_id;
}

export const ONE_GRANTING_INDEX = 'subscriptions_one_granting_per_workspace';

