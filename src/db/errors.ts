/**
 * PostgreSQL errors as the code needs them. Drizzle wraps the driver's error (its `cause`), and
 * its wrapper's message holds the query and its parameters: read the driver's error instead.
 */

const UNIQUE_VIOLATION = '23505';

/** A unique violation (SQLSTATE 23505), optionally of one named constraint or index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, constraint: name, message } = e as { code?: string; constraint?: string; message?: string };
    if (code === UNIQUE_VIOLATION) return !constraint || name === constraint || Boolean(message?.includes(constraint));
  }
  return false;
}

/** The driver's own message, without the query and parameters drizzle's wrapper adds. */
export function rootMessage(error: unknown): string {
  let e: unknown = error;
  while (e && typeof e === 'object' && 'cause' in e && (e as { cause?: unknown }).cause) e = (e as { cause: unknown }).cause;
  return e instanceof Error ? e.message : String(e);
}
