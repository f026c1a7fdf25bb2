import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, queryRows } from '../../../db/client.js';
import { users } from '../../users/users.table.js';
import { creditUsage, creditUsageDaily } from '../billing.table.js';
import type { UsageGroup } from './usage.schemas.js';

export interface UsageFilter {
  workspaceId: string;
  /** Only this user's rows (a member's own view). */
  userId?: number;
  groupBy: UsageGroup;
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
}

export interface UsageGroupRow {
  key: string;
  userEmail: string | null;
  userName: string | null;
  userExists: boolean;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** Exact decimal text from the database. */
  cost: string;
}

const DAY_MS = 86_400_000;
const dayOf = (date: Date) => date.toISOString().slice(0, 10);

/**
 * Whole UTC days inside [from, to) come from the daily totals (`credit_usage_daily`), the partial
 * days at either edge from the ledger itself (index on workspace and time): exact for any range,
 * and a month costs a few thousand rows instead of every call.
 */
function usageParts(filter: UsageFilter): SQL {
  const firstWholeDay = new Date(Math.ceil(filter.from.getTime() / DAY_MS) * DAY_MS);
  const endOfWholeDays = new Date(Math.floor(filter.to.getTime() / DAY_MS) * DAY_MS);
  const hasWholeDays = firstWholeDay < endOfWholeDays;
  // Without whole days the ledger covers [from, to) alone.
  const ledgerUntil = hasWholeDays ? firstWholeDay : filter.to;
  const ledgerFrom = hasWholeDays ? endOfWholeDays : filter.to;
  const daily = creditUsageDaily;
  const ledger = creditUsage;
  const dailyUser = filter.userId !== undefined ? sql` AND ${daily.userId} = ${filter.userId}` : sql``;
  const ledgerUser = filter.userId !== undefined ? sql` AND ${ledger.userId} = ${filter.userId}` : sql``;
  const wholeDays = hasWholeDays
    ? // A deleted user's totals keep their id; the ledger's rows lost it (set null): both count as no user.
      sql`SELECT CASE WHEN EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${daily.userId}) THEN ${daily.userId} ELSE 0 END AS user_id,
          ${daily.kind} AS kind, ${daily.model} AS model, ${daily.day} AS day,
          ${daily.calls} AS calls, ${daily.inputTokens} AS input_tokens, ${daily.outputTokens} AS output_tokens, ${daily.costUsd} AS cost
        FROM ${daily}
        WHERE ${daily.workspaceId} = ${filter.workspaceId} AND ${daily.day} >= ${dayOf(firstWholeDay)}::date
          AND ${daily.day} < ${dayOf(endOfWholeDays)}::date${dailyUser}
        UNION ALL `
    : sql``;
  return sql`${wholeDays}SELECT coalesce(${ledger.userId}, 0) AS user_id, ${ledger.kind} AS kind, ${ledger.model} AS model,
        (${ledger.createdAt} AT TIME ZONE 'UTC')::date AS day, 1::bigint AS calls, ${ledger.inputTokens}::bigint AS input_tokens,
        ${ledger.outputTokens}::bigint AS output_tokens, ${ledger.costUsd}::numeric AS cost
      FROM ${ledger}
      WHERE ${ledger.workspaceId} = ${filter.workspaceId}
        AND ((${ledger.createdAt} >= ${filter.from.toISOString()}::timestamptz AND ${ledger.createdAt} < ${ledgerUntil.toISOString()}::timestamptz)
          OR (${ledger.createdAt} >= ${ledgerFrom.toISOString()}::timestamptz AND ${ledger.createdAt} < ${filter.to.toISOString()}::timestamptz))${ledgerUser}`;
}

const groupKey: Record<UsageGroup, SQL> = {
  user: sql`user_id::text`,
  model: sql`model`,
  kind: sql`kind`,
  day: sql`to_char(day, 'YYYY-MM-DD')`,
};

/** One page of groups with the number of groups; all of them when `limit` is null (CSV). */
export async function aggregateUsage(
  db: DbOrTx,
  filter: UsageFilter,
  page: { limit: number | null; offset: number },
): Promise<{ count: number; rows: UsageGroupRow[] }> {
  const order = filter.groupBy === 'day' ? sql`g.key` : sql`g.cost DESC, g.key`;
  const limit = page.limit === null ? sql`` : sql` LIMIT ${page.limit}`;
  const rows = await queryRows<{
    key: string;
    calls: string;
    input_tokens: string;
    output_tokens: string;
    cost: string;
    total: string;
    user_exists: boolean;
    email: string | null;
    name: string | null;
  }>(
    db,
    sql`WITH parts AS (${usageParts(filter)}),
      g AS (
        SELECT ${groupKey[filter.groupBy]} AS key, sum(calls)::bigint AS calls, sum(input_tokens)::bigint AS input_tokens,
          sum(output_tokens)::bigint AS output_tokens, sum(cost)::numeric(20, 8) AS cost, count(*) OVER () AS total
        FROM parts GROUP BY 1
      )
      SELECT g.key, g.calls::text, g.input_tokens::text, g.output_tokens::text, g.cost::text, g.total::text,
        ${users.id} IS NOT NULL AS user_exists, ${users.email} AS email, ${users.name} AS name
      FROM g LEFT JOIN ${users} ON ${filter.groupBy === 'user' ? sql`${users.id}::text = g.key` : sql`false`}
      ORDER BY ${order}${limit} OFFSET ${page.offset}`,
  );
  let count = rows[0] ? Number(rows[0].total) : 0;
  if (rows.length === 0 && page.offset > 0) {
    const [row] = await queryRows<{ n: string }>(
      db,
      sql`WITH parts AS (${usageParts(filter)}) SELECT count(DISTINCT ${groupKey[filter.groupBy]})::text AS n FROM parts`,
    );
    count = Number(row?.n ?? 0);
  }
  return {
    count,
    rows: rows.map((row) => ({
      key: row.key,
      userEmail: row.email,
      userName: row.name,
      userExists: row.user_exists,
      calls: Number(row.calls),
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      cost: row.cost,
    })),
  };
}
