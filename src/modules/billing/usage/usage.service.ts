import type { Db } from '../../../db/client.js';
import { ValidationError } from '../../../platform/errors.js';
import type { PageResult } from '../../../platform/pagination.js';
import { requireMember } from '../../workspaces/index.js';
import { isOwnerOrAdmin } from '../../workspaces/index.js';
import { aggregateUsage, type UsageGroupRow } from './usage.repo.js';
import type { UsageGroup, UsageQuery, UsageRowOut } from './usage.schemas.js';

const DAY_MS = 86_400_000;
/** Longest range one request may cover. */
export const MAX_USAGE_RANGE_DAYS = 366;
const DEFAULT_RANGE_DAYS = 30;
/** A CSV export holds every group; groups are bounded (days, kinds, models, members), this is a backstop. */
const CSV_MAX_ROWS = 10_000;

const isDay = (value: string) => /^\d{4}-\d{2}-\d{2}$/.test(value);

/** `from` as given (a day starts at 00:00 UTC); `to` exclusive, so a day given as `to` counts in full. */
export function usageRange(query: { from?: string; to?: string }, now = new Date()): { from: Date; to: Date } {
  const to = query.to ? (isDay(query.to) ? new Date(Date.parse(`${query.to}T00:00:00Z`) + DAY_MS) : new Date(query.to)) : now;
  const from = query.from ? new Date(isDay(query.from) ? `${query.from}T00:00:00Z` : query.from) : new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
  if (from > to) throw new ValidationError('`from` must not be after `to`.', { from: ['Must not be after `to`.'] }, 'invalid_range');
  if (to.getTime() - from.getTime() > MAX_USAGE_RANGE_DAYS * DAY_MS) {
    throw new ValidationError(`A range covers at most ${MAX_USAGE_RANGE_DAYS} days.`, { from: [`At most ${MAX_USAGE_RANGE_DAYS} days before \`to\`.`] }, 'range_too_long');
  }
  return { from, to };
}

function toOut(groupBy: UsageGroup, row: UsageGroupRow): UsageRowOut {
  return {
    key: row.key,
    ...(groupBy === 'user'
      ? { user: row.userExists ? { id: Number(row.key), email: row.userEmail ?? '', name: row.userName ?? '' } : null }
      : {}),
    calls: row.calls,
    input_tokens: row.inputTokens,
    output_tokens: row.outputTokens,
    cost: Number(row.cost),
  };
}

/** RFC 4180 quoting, and a leading `'` on what a spreadsheet would run as a formula. */
function csvCell(value: string | number): string {
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function toCsv(groupBy: UsageGroup, rows: UsageGroupRow[]): string {
  const header = groupBy === 'user' ? ['user_id', 'email', 'name'] : [groupBy];
  const lines = [[...header, 'calls', 'input_tokens', 'output_tokens', 'cost'].join(',')];
  for (const row of rows) {
    const key = groupBy === 'user' ? [row.key, row.userEmail ?? '', row.userName ?? ''] : [row.key];
    lines.push([...key, row.calls, row.inputTokens, row.outputTokens, row.cost].map(csvCell).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

/**
 * Usage analytics from the credit ledger: calls, tokens and cost per user, model, kind or day.
 * The owner and admins see the whole workspace; a member sees only their own calls.
 */
export function createUsageService({ db }: { db: Db }) {
  async function scope(userId: number, workspaceId: string, query: Pick<UsageQuery, 'from' | 'to' | 'group_by'>) {
    const access = await requireMember(db, workspaceId, userId);
    const range = usageRange(query);
    return {
      workspaceId,
      groupBy: query.group_by,
      ...range,
      ...(isOwnerOrAdmin(access) ? {} : { userId }),
    };
  }

  return {
    async report(userId: number, workspaceId: string, query: UsageQuery): Promise<PageResult<UsageRowOut> & { from: Date; to: Date }> {
      const filter = await scope(userId, workspaceId, query);
      const { count, rows } = await aggregateUsage(db, filter, { limit: query.limit, offset: query.offset });
      return { count, results: rows.map((row) => toOut(query.group_by, row)), from: filter.from, to: filter.to };
    },

    /** Every group as CSV with a header row, and a file name for the download. */
    async csv(userId: number, workspaceId: string, query: UsageQuery): Promise<{ filename: string; body: string }> {
      const filter = await scope(userId, workspaceId, query);
      const { rows } = await aggregateUsage(db, filter, { limit: CSV_MAX_ROWS, offset: 0 });
      const day = (date: Date) => date.toISOString().slice(0, 10);
      return { filename: `usage-${query.group_by}-${day(filter.from)}-${day(filter.to)}.csv`, body: toCsv(query.group_by, rows) };
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
