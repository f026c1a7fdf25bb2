/**
 * PostgreSQL errors as the billing repositories need them (drizzle wraps the driver's error).
 * Issue 13 item 6 gives the service one src/db/errors.ts with these two; when it lands, this file
 * re-exports it or goes.
 */

/** A unique violation, optionally of one named constraint (drizzle wraps the driver's error). */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, constraint: name, message } = e as { code?: string; constraint?: string; message?: string };
    if (code === '23505') return !constraint || name === constraint || Boolean(message?.includes(constraint));
  }
  return false;
}

/** The driver's own message (drizzle's wrapper adds the query and its parameters). */
export function rootMessage(error: unknown): string {
  let e: unknown = error;
  while (e && typeof e === 'object' && 'cause' in e && (e as { cause?: unknown }).cause) e = (e as { cause: unknown }).cause;
  return e instanceof Error ? e.message : String(e);
}
