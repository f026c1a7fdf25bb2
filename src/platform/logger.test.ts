import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { testDatabase } from '../../test/support/db.js';
import { captureLog } from '../../test/support/log.js';

describe('the process logger', () => {
  it('never writes the parameters of a failed query, from the error or its causes', async () => {
    const database = await testDatabase();
    const secret = '$argon2id$v=19$m=19456,t=2,p=1$c2VjcmV0c2FsdA$not-a-real-hash';
    const error = await database.db.execute(sql`SELECT ${secret}::text AS hash, 1 / 0 AS n`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String((error as Error).message)).toContain(secret);
    const captured = captureLog('info');
    captured.log.error({ err: error }, 'query failed');
    captured.log.error({ err: new Error('wrapped', { cause: error }) }, 'wrapped failure');
    const text = JSON.stringify(captured.lines());
    expect(text).not.toContain('argon2id');
    expect(text).toContain('params: [redacted]');
    // The SQL text itself (no values) is kept for debugging.
    expect(text).toContain('SELECT $1::text AS hash, 1 / 0 AS n');
  });
});
