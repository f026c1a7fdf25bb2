import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, testDatabase } from '../../test/support/db.js';
import { isForeignKeyViolation, isServerError, isUniqueViolation, rootMessage } from './errors.js';

/*
 * The violations as the driver of this profile raises them through drizzle (PostgreSQL's
 * node-postgres or PGlite): the SQLSTATE and the constraint's name are on the wrapper's cause, the
 * driver's error, whose message names the constraint too.
 */

// The worker's shared database: not closed here, other files use it after this one.
let database: TestDatabase;
beforeAll(async () => {
  database = await testDatabase();
});

/** The error a statement raises. */
async function failureOf(statement: ReturnType<typeof sql>): Promise<unknown> {
  return database.db.execute(statement).then(
    () => expect.unreachable('the statement should have failed'),
    (error: unknown) => error,
  );
}

describe('PostgreSQL errors as the code reads them', () => {
  it('finds a foreign key violation of a named constraint through drizzle’s wrapper, and nothing else in it', async () => {
    const error = await failureOf(
      sql`INSERT INTO messages (session_id, role, content) VALUES ('00000000-0000-7000-8000-000000000000', 'user', 'orphan')`,
    );
    expect(isForeignKeyViolation(error)).toBe(true);
    expect(isForeignKeyViolation(error, 'messages_session_id_chat_sessions_id_fk')).toBe(true);
    expect(isForeignKeyViolation(error, 'messages_parent_id_messages_id_fk')).toBe(false);
    // A name that only begins the violated one is another constraint.
    expect(isForeignKeyViolation(error, 'messages_session_id')).toBe(false);
    expect(isUniqueViolation(error)).toBe(false);
    // The wrapper's message holds the statement; the root message is the driver's own.
    expect(rootMessage(error)).toMatch(/foreign key constraint/);
    expect(rootMessage(error)).not.toMatch(/INSERT INTO/);
  });

  it('finds a unique violation of a named index, and tells it from a foreign key violation', async () => {
    const email = `twice-${Date.now()}@example.com`;
    const insert = sql`INSERT INTO users (email, password_hash) VALUES (${email}, 'x')`;
    await database.db.execute(insert);
    try {
      const error = await failureOf(insert);
      expect(isUniqueViolation(error)).toBe(true);
      expect(isUniqueViolation(error, 'users_email_key')).toBe(true);
      expect(isUniqueViolation(error, 'workspaces_slug_key')).toBe(false);
      expect(isForeignKeyViolation(error)).toBe(false);
    } finally {
      await database.db.execute(sql`DELETE FROM users WHERE email = ${email}`);
    }
  });

  it('answers false for what is not a database error, and stops at a cycle of causes', () => {
    for (const value of [undefined, null, 'text', 42, new Error('plain')]) {
      expect(isForeignKeyViolation(value)).toBe(false);
      expect(isUniqueViolation(value)).toBe(false);
    }
    const cyclic = new Error('loops');
    cyclic.cause = cyclic;
    expect(isForeignKeyViolation(cyclic)).toBe(false);
    expect(rootMessage(cyclic)).toBe('loops');
  });

  it("tells the server's errors from the socket's and the client's", async () => {
    const error = await failureOf(sql`SELECT 1 / 0`);
    // drizzle's wrapper is not the server's error; the driver's, its cause, is.
    expect(isServerError(error)).toBe(false);
    expect(isServerError((error as { cause?: unknown }).cause)).toBe(true);
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
    for (const value of [epipe, new Error('Connection terminated unexpectedly'), undefined, null, 'text']) {
      expect(isServerError(value)).toBe(false);
    }
  });
});
