import { sql } from 'drizzle-orm';
import { commitWithoutFlushWait, type DbOrTx, preparedStatement, queryRows, type StatementParam } from '../../../db/client.js';
import type { UsageKind } from '../billing.table.js';

/**
 * The credit ledger (`credit_usage`) and its running totals (`credit_balances`, one row per
 * workspace and credit period, kept by a trigger on the ledger; migration 0010). Each function is
 * one statement: the hot path (reserve, settle, release) holds no lock across round trips.
 */

/**
 * The per-workspace advisory lock of the totals (the ledger trigger takes it too). Every statement
 * that changes totals of more than one period, or opens one, takes it before any balance row, so
 * no two of them wait on each other's rows (two settles across a period change would deadlock).
 */
const workspaceLock = (workspaceId: string) => sql`pg_advisory_xact_lock(hashtextextended(${workspaceId}::uuid::text, 0))`;

/** The workspace's running totals for the period starting at `periodStart`; undefined until opened. */
export async function findBalance(db: DbOrTx, workspaceId: string, periodStart: Date) {
  const [row] = await queryRows<{ used_usd: string; reserved_usd: string }>(
    db,
    sql`SELECT used_usd, reserved_usd FROM credit_balances WHERE workspace_id = ${workspaceId} AND period_start = ${periodStart}`,
  );
  return row && { usedUsd: Number(row.used_usd), reservedUsd: Number(row.reserved_usd) };
}

/**
 * Opens a period's totals from the ledger (once per workspace and period). Under the workspace's
 * advisory lock, which the ledger trigger takes too: a ledger row committed concurrently is
 * either in the sum or added by the trigger, never lost. Must run inside a transaction.
 */
export async function openBalance(tx: DbOrTx, workspaceId: string, periodStart: Date): Promise<void> {
  await tx.execute(sql`SELECT ${workspaceLock(workspaceId)}`);
  await tx.execute(sql`
    INSERT INTO credit_balances (workspace_id, period_start, used_usd)
    SELECT ${workspaceId}, ${periodStart}, coalesce(sum(cost_usd), 0)
    FROM credit_usage WHERE workspace_id = ${workspaceId} AND created_at >= ${periodStart}
    ON CONFLICT DO NOTHING`);
}

/** The values of holdCtes' parameters (holdValues makes them). */
export type HoldValues = {
  hold_amount: number;
  hold_workspace: string;
  hold_period: string;
  hold_limit: number;
  hold_expires: string;
};

export const holdValues = (workspaceId: string, periodStart: Date, amountUsd: number, limitUsd: number, expiresAt: Date): HoldValues => ({
  hold_amount: amountUsd,
  hold_workspace: workspaceId,
  hold_period: periodStart.toISOString(),
  hold_limit: limitUsd,
  hold_expires: expiresAt.toISOString(),
});

/**
 * Holds `hold_amount` of the period's credit: two CTEs, `held` and `reservation` (the hold's
 * `id`), that check and reserve in one statement. Refused (no row) once the recorded cost plus
 * the credit held reaches `hold_limit`, or when the period's totals are not opened yet.
 * Concurrent calls queue on the balance row for their statement only (no lock across round
 * trips), and each re-checks the limit against the row as the previous one left it. A caller
 * whose own write must happen only with the credit held composes these CTEs into its statement
 * and writes `FROM reservation` (a JSON send's user message: one statement, so a refused send
 * leaves nothing). The row stays locked until that whole statement commits, so what it does
 * besides (the send's message and the read of its branch) is time other holds of the workspace
 * wait: keep it to single-row writes and index lookups.
 *
 * Its commit does not wait for the WAL flush (commitWithoutFlushWait): a hold lasts one model
 * call and lapses by itself (RESERVATION_TTL_MS). What a database crash can cost: the holds of
 * the last fraction of a second before it are lost, so calls in flight across the crash are not
 * counted against the limit while they run (the credit check may let the period overrun by
 * about their cost); each is still charged when it settles, if its turn can save its reply. The
 * ledger (settle) keeps synchronous commits.
 */
export const holdCtes = (p: StatementParam) => sql`held AS (
      UPDATE credit_balances SET reserved_usd = reserved_usd + ${p('hold_amount')}::numeric
      WHERE workspace_id = ${p('hold_workspace')}::uuid AND period_start = ${p('hold_period')}::timestamptz
        AND used_usd + reserved_usd < ${p('hold_limit')}::numeric
      RETURNING workspace_id, period_start
    ), reservation AS (
      INSERT INTO credit_reservations (workspace_id, amount_usd, period_start, expires_at)
      SELECT workspace_id, ${p('hold_amount')}::numeric, period_start, ${p('hold_expires')}::timestamptz FROM held
      WHERE ${commitWithoutFlushWait}
      RETURNING id
    )`;

const reserveStatement = preparedStatement<{ id: string }>((p) => sql`WITH ${holdCtes(p)} SELECT id FROM reservation`);

/** The hold of holdCtes alone: its id, or undefined when refused. */
export async function reserve(db: DbOrTx, hold: HoldValues): Promise<string | undefined> {
  const [row] = await reserveStatement(db, hold);
  return row?.id;
}

/**
 * Closes the workspace's expired reservations (their process died) and gives their credit back
 * to the totals. Returns how many were closed.
 */
export async function closeExpiredReservations(db: DbOrTx, workspaceId: string): Promise<number> {
  const rows = await queryRows<{ n: string }>(
    db,
    sql`WITH locked AS MATERIALIZED (SELECT ${workspaceLock(workspaceId)}), expired AS (
      UPDATE credit_reservations SET closed_at = now() FROM locked
      WHERE workspace_id = ${workspaceId} AND closed_at IS NULL AND expires_at <= now()
      RETURNING period_start, amount_usd
    ), totals AS (
      SELECT period_start, sum(amount_usd) AS total, count(*) AS n FROM expired WHERE period_start IS NOT NULL GROUP BY 1
    ), given_back AS (
      UPDATE credit_balances b SET reserved_usd = b.reserved_usd - t.total
      FROM totals t WHERE b.workspace_id = ${workspaceId} AND b.period_start = t.period_start
    )
    SELECT count(*) AS n FROM expired`,
  );
  return Number(rows[0]?.n ?? 0);
}

export interface UsageRecord {
  workspaceId: string;
  userId: number | null;
  kind: UsageKind;
  model: string;
  inputTokens: number;
  outputTokens: number;
  seconds: number;
  costUsd: number;
  referenceId: string;
}

/**
 * Closes a reservation (its credit leaves the totals; closing one already closed changes
 * nothing) and, given a usage record, charges it to the ledger once per reference id (the
 * trigger adds it to the totals). One statement. Returns whether the usage was charged.
 */
export async function closeReservation(db: DbOrTx, workspaceId: string, reservationId: string, usage?: UsageRecord): Promise<boolean> {
  const charge = usage
    ? sql`, charged AS (
        INSERT INTO credit_usage (workspace_id, user_id, kind, model, input_tokens, output_tokens, seconds, cost_usd, reference_id)
        VALUES (${usage.workspaceId}, ${usage.userId}, ${usage.kind}, ${usage.model}, ${usage.inputTokens}, ${usage.outputTokens},
                ${usage.seconds}, ${usage.costUsd}, ${usage.referenceId})
        ON CONFLICT (reference_id) DO NOTHING
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM charged) AS charged`
    : sql` SELECT 0 AS charged`;
  const [row] = await queryRows<{ charged: string | number }>(
    db,
    sql`WITH locked AS MATERIALIZED (SELECT ${workspaceLock(workspaceId)}), closed AS (
      UPDATE credit_reservations SET closed_at = now() FROM locked
      WHERE id = ${reservationId} AND closed_at IS NULL
      RETURNING workspace_id, period_start, amount_usd
    ), released AS (
      UPDATE credit_balances b SET reserved_usd = b.reserved_usd - c.amount_usd
      FROM closed c WHERE b.workspace_id = c.workspace_id AND b.period_start = c.period_start
    )${charge}`,
  );
  return Number(row?.charged ?? 0) > 0;
}

/** Sum of the ledger since `since` (inclusive): the totals' source, and the summary before they are opened. */
export async function sumUsageSince(db: DbOrTx, workspaceId: string, since: Date): Promise<number> {
  const [row] = await queryRows<{ total: string | null }>(
    db,
    sql`SELECT sum(cost_usd) AS total FROM credit_usage WHERE workspace_id = ${workspaceId} AND created_at >= ${since}`,
  );
  return Number(row?.total ?? 0);
}
