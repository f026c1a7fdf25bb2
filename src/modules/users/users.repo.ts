import { and, eq, gt, isNull, ne, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { authTokens, emailTokens, passwordResetTokens, users } from './users.table.js';

export type UserRow = typeof users.$inferSelect;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function findUserById(db: DbOrTx, id: number): Promise<UserRow | undefined> {
  const [row] = await db.select().from(users).where(eq(users.id, id));
  return row;
}

/** A user's id, name and address (billing contacts, checkout's customer), without the credentials. */
export async function findUserSummary(db: DbOrTx, id: number): Promise<{ id: number; name: string; email: string } | undefined> {
  const [row] = await db.select({ id: users.id, name: users.name, email: users.email }).from(users).where(eq(users.id, id));
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
  values: { email: string; name: string; passwordHash: string; emailVerifiedAt?: Date | null },
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

/**
 * Marks the user's email verified (keeping an earlier verification time). With `email`, only
 * while the account still has that address: a proof of one mailbox never verifies another.
 * Returns whether a row was marked.
 */
export async function markEmailVerified(db: DbOrTx, id: number, email?: string): Promise<boolean> {
  const rows = await db
    .update(users)
    .set({ emailVerifiedAt: sql`coalesce(${users.emailVerifiedAt}, now())`, updatedAt: new Date() })
    .where(and(eq(users.id, id), email === undefined ? undefined : sql`lower(${users.email}) = ${normalizeEmail(email)}`))
    .returning({ id: users.id });
  return rows.length > 0;
}

/** Replaces the user's address with a proven one (verified now). */
export async function setVerifiedEmail(db: DbOrTx, id: number, email: string): Promise<UserRow | undefined> {
  const now = new Date();
  const [row] = await db
    .update(users)
    .set({ email: normalizeEmail(email), emailVerifiedAt: now, updatedAt: now })
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

/** Records a use; the condition keeps concurrent requests and processes from writing more than once per interval. */
export async function touchToken(db: DbOrTx, tokenId: string, intervalSeconds: number): Promise<void> {
  await db
    .update(authTokens)
    .set({ lastUsedAt: sql`now()` })
    .where(
      and(
        eq(authTokens.id, tokenId),
        or(isNull(authTokens.lastUsedAt), sql`${authTokens.lastUsedAt} < now() - make_interval(secs => ${intervalSeconds})`),
      ),
    );
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

/** Drops the user's unused password-reset secrets (after an email change: they were mailed to the old address). */
export async function deletePasswordResets(db: DbOrTx, userId: number): Promise<void> {
  await db.delete(passwordResetTokens).where(and(eq(passwordResetTokens.userId, userId), isNull(passwordResetTokens.usedAt)));
}

// --- email tokens (activation, email change) -----------------------------------------------------

export type EmailTokenPurpose = (typeof emailTokens.$inferSelect)['purpose'];

/**
 * Stores a new secret for `purpose`; the user's older unused secrets of the same purpose stop
 * working (a new link supersedes the previous ones).
 */
export async function replaceEmailToken(
  db: DbOrTx,
  values: { userId: number; purpose: EmailTokenPurpose; newEmail?: string; tokenHash: string; expiresAt: Date },
): Promise<void> {
  await db.transaction(async (tx) => {
    await deleteEmailTokens(tx, values.userId, values.purpose);
    await tx.insert(emailTokens).values({
      userId: values.userId,
      purpose: values.purpose,
      newEmail: values.newEmail === undefined ? null : normalizeEmail(values.newEmail),
      tokenHash: values.tokenHash,
      expiresAt: values.expiresAt,
    });
  });
}

/** Drops the user's unused secrets (of one purpose, or all). */
export async function deleteEmailTokens(db: DbOrTx, userId: number, purpose?: EmailTokenPurpose): Promise<void> {
  await db
    .delete(emailTokens)
    .where(
      and(
        eq(emailTokens.userId, userId),
        isNull(emailTokens.usedAt),
        purpose === undefined ? undefined : eq(emailTokens.purpose, purpose),
      ),
    );
}

/**
 * Marks an unused, unexpired secret of `purpose` used and returns its user and address;
 * undefined if there is none. Single-use under concurrency: the conditional UPDATE lets one
 * transaction have it.
 */
export async function consumeEmailToken(
  db: DbOrTx,
  tokenHash: string,
  purpose: EmailTokenPurpose,
): Promise<{ userId: number; newEmail: string | null } | undefined> {
  const [row] = await db
    .update(emailTokens)
    .set({ usedAt: new Date() })
    .where(
      and(
        eq(emailTokens.tokenHash, tokenHash),
        eq(emailTokens.purpose, purpose),
        isNull(emailTokens.usedAt),
        gt(emailTokens.expiresAt, sql`now()`),
      ),
    )
    .returning({ userId: emailTokens.userId, newEmail: emailTokens.newEmail });
  return row;
}
