import { and, eq, gt, gte, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../../db/client.js';
import { creditReservations, creditUsage, type UsageKind } from '../billing.table.js';

/** Sum of the ledger since `since` (inclusive). */
export async function sumUsageSince(db: DbOrTx, workspaceId: string, since: Date): Promise<number> {
  const [row] = await db
    .select({ total: sql<string | null>`sum(${creditUsage.costUsd})` })
    .from(creditUsage)
    .where(and(eq(creditUsage.workspaceId, workspaceId), gte(creditUsage.createdAt, since)));
  return Number(row?.total ?? 0);
}

/** Credit held by reservations that are neither closed nor expired. */
export async function sumOpenReservations(db: DbOrTx, workspaceId: string): Promise<number> {
  const [row] = await db
    .select({ total: sql<string | null>`sum(${creditReservations.amountUsd})` })
    .from(creditReservations)
    .where(
      and(
        eq(creditReservations.workspaceId, workspaceId),
        isNull(creditReservations.closedAt),
        gt(creditReservations.expiresAt, sql`now()`),
      ),
    );
  return Number(row?.total ?? 0);
}

export async function insertReservation(db: DbOrTx, workspaceId: string, amountUsd: number, expiresAt: Date) {
  const [row] = await db.insert(creditReservations).values({ workspaceId, amountUsd, expiresAt }).returning();
  return row!;
}

/** Closes an open reservation; false when it was already closed. */
export async function closeReservation(db: DbOrTx, reservationId: string): Promise<boolean> {
  const rows = await db
    .update(creditReservations)
    .set({ closedAt: new Date() })
    .where(and(eq(creditReservations.id, reservationId), isNull(creditReservations.closedAt)))
    .returning({ id: creditReservations.id });
  return rows.length > 0;
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

/** Inserts a ledger row; false when the reference id was already charged. */
export async function insertUsage(db: DbOrTx, record: UsageRecord): Promise<boolean> {
  const rows = await db
    .insert(creditUsage)
    .values(record)
    .onConflictDoNothing({ target: creditUsage.referenceId })
    .returning({ id: creditUsage.id });
  return rows.length > 0;
}
