/**
 * PostgreSQL errors as the code needs them. Drizzle wraps the driver's error (its `cause`), and
 * its wrapper's message holds the query and its parameters: read the driver's error instead.
 */

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
/** How deep a chain of causes is followed (drizzle wraps once; a cycle must not loop). */
const CAUSE_DEPTH = 5;

/** The error, then its causes, at most CAUSE_DEPTH of them in all. */
function* causeChain(error: unknown): Generator<unknown> {
  for (let e: unknown = error, depth = 0; e && depth < CAUSE_DEPTH; e = (e as { cause?: unknown }).cause, depth++) yield e;
}

/** An error of SQLSTATE `sqlState` (in the error or its causes), optionally of one named constraint or index. */
function isViolation(error: unknown, sqlState: string, constraint?: string): boolean {
  for (const e of causeChain(error)) {
    const { code, constraint: name, message } = e as { code?: string; constraint?: string; message?: string };
    // PostgreSQL quotes the name in its message: a name that only begins another does not match.
    if (code === sqlState) return !constraint || name === constraint || Boolean(message?.includes(`"${constraint}"`));
  }
  return false;
}

/**
 * An error the database server raised (pg's DatabaseError, PGlite's): a five-character SQLSTATE
 * and the server's own fields. A socket's error (`EPIPE`, five letters too) or the client's own
 * (a closed connection, a timeout) is not one.
 */
export function isServerError(error: unknown): boolean {
  const { code, severity, routine } = (error ?? {}) as { code?: unknown; severity?: unknown; routine?: unknown };
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && (typeof severity === 'string' || typeof routine === 'string');
}

/** A unique violation (SQLSTATE 23505), optionally of one named constraint or index. */
export const isUniqueViolation = (error: unknown, constraint?: string) => isViolation(error, UNIQUE_VIOLATION, constraint);

/** A foreign key violation (SQLSTATE 23503), optionally of one named constraint: a row referred to is gone. */
export const isForeignKeyViolation = (error: unknown, constraint?: string) => isViolation(error, FOREIGN_KEY_VIOLATION, constraint);

/** The driver's own message, without the query and parameters drizzle's wrapper adds. */
export function rootMessage(error: unknown): string {
  let root: unknown = error;
  for (const e of causeChain(error)) root = e;
  return root instanceof Error ? root.message : String(root);
}
