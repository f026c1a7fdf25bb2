import { and, count, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { apiKeys, users } from '../users/users.table.js';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

const live = () => and(isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, sql`now()`)));

export async function insertApiKey(
  db: DbOrTx,
  values: { userId: number; name: string; prefix: string; keyHash: string; workspaceId: string | null; readOnly: boolean; expiresAt: Date | null },
): Promise<ApiKeyRow> {
  const [row] = await db.insert(apiKeys).values(values).returning();
  return row!;
}

/** Keys that still work (not revoked, not expired). */
export async function countLiveApiKeys(db: DbOrTx, userId: number): Promise<number> {
  const [row] = await db.select({ n: count() }).from(apiKeys).where(and(eq(apiKeys.userId, userId), live()));
  return row?.n ?? 0;
}

/** The user's keys that were not revoked (expired ones included, so the user sees why one stopped), newest first. */
export async function listApiKeys(db: DbOrTx, userId: number, limit: number, offset: number) {
  const where = and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt));
  const [rows, [total]] = await Promise.all([
    db.select().from(apiKeys).where(where).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(apiKeys).where(where),
  ]);
  return { rows, count: total?.n ?? 0 };
}

/** Revokes one key of the user; false when the user has no such unrevoked key. */
export async function revokeApiKey(db: DbOrTx, userId: number, id: string): Promise<boolean> {
  const rows = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return rows.length > 0;
}

/** Revokes every key of the user (password change or reset). */
export async function revokeUserApiKeys(db: DbOrTx, userId: number): Promise<void> {
  await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)));
}

/** The live key behind a hash, with its active user. */
export async function findLiveApiKey(db: DbOrTx, keyHash: string) {
  const [row] = await db
    .select({ key: apiKeys, user: { id: users.id, email: users.email, name: users.name } })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(and(eq(apiKeys.keyHash, keyHash), live(), eq(users.isActive, true)));
  return row;
}

/** Records a use; the condition keeps concurrent requests from writing more than once a minute. */
export async function touchApiKey(db: DbOrTx, id: string, intervalSeconds: number): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(
      and(
        eq(apiKeys.id, id),
        or(isNull(apiKeys.lastUsedAt), sql`${apiKeys.lastUsedAt} < now() - make_interval(secs => ${intervalSeconds})`),
      ),
    );
}
