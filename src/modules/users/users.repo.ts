import { and, eq, gt, isNull, ne, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { authTokens, passwordResetTokens, users } from './users.table.js';

export type UserRow = typeof users.$inferSelect;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function findUserById(db: DbOrTx, id: number): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.id, id));
  return row;
}

export async function findUserByEmail(db: DbOrTx, email: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(sql`lower(${users.email}) = ${normalizeEmail(email)}`);
  return row;
}

export async function insertUser(
  db: DbOrTx,
  values: { email: string; name: string; passwordHash: string },
): Promise<UserRow | undefined> {
  const [row] = await db
    .insert(users)
    .values({ ...values, email: normalizeEmail(values.email) })
    .onConflictDoNothing()
    .returning();
  return row;
}

export async function updateUser(
  db: DbOrTx,
  id: number,
  values: Partial<Pick<UserRow, 'email' | 'name' | 'passwordHash'>>,
): Promise<UserRow | undefined> {
  const [row] = await db
    .update(users)
    .set({ ...values, ...(values.email ? { email: normalizeEmail(values.email) } : {}), updatedAt: new Date() })
    .where(eq(users.id, id))
    .returning();
  return row;
}

export async function deleteUser(db: DbOrTx, id: number): Promise<void> {
  await db.delete(users).where(eq(users.id, id));
}

// --- tokens -----------------------------------------------------------------------------------

export async function insertToken(db: DbOrTx, userId: number, tokenHash: string, expiresAt: Date) {
  const [row] = await db.insert(authTokens).values({ userId, tokenHash, expiresAt }).returning();
  return row!;
}

/** The active user and token behind a token hash, if the token has not expired. */
export async function findActiveToken(db: DbOrTx, tokenHash: string) {
  const [row] = await db
    .select({ token: authTokens, user: users })
    .from(authTokens)
    .innerJoin(users, eq(users.id, authTokens.userId))
    .where(and(eq(authTokens.tokenHash, tokenHash), gt(authTokens.expiresAt, sql`now()`), eq(users.isActive, true)));
  return row;
}

export async function touchToken(db: DbOrTx, tokenId: string): Promise<void> {
  await db.update(authTokens).set({ lastUsedAt: new Date() }).where(eq(authTokens.id, tokenId));
}

export async function deleteToken(db: DbOrTx, tokenId: string): Promise<void> {
  await db.delete(authTokens).where(eq(authTokens.id, tokenId));
}

/** Revokes every token of a user, except `keepTokenId` when given. */
export async function deleteUserTokens(db: DbOrTx, userId: number, keepTokenId?: string): Promise<void> {
  await db
    .delete(authTokens)
    .where(keepTokenId ? and(eq(authTokens.userId, userId), ne(authTokens.id, keepTokenId)) : eq(authTokens.userId, userId));
}

// --- password reset ---------------------------------------------------------------------------

export async function insertPasswordReset(db: DbOrTx, userId: number, tokenHash: string, expiresAt: Date) {
  await db.insert(passwordResetTokens).values({ userId, tokenHash, expiresAt });
}

/** Marks an unused, unexpired reset secret used and returns its user id; undefined if none. */
export async function consumePasswordReset(db: DbOrTx, tokenHash: string): Promise<number | undefined> {
  const [row] = await db
    .update(passwordResetTokens)
    .set({ usedAt: new Date() })
    .where(
      and(
        eq(passwordResetTokens.tokenHash, tokenHash),
        isNull(passwordResetTokens.usedAt),
        gt(passwordResetTokens.expiresAt, sql`now()`),
      ),
    )
    .returning({ userId: passwordResetTokens.userId });
  return row?.userId;
}
