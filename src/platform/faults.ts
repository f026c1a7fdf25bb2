/**
 * Infrastructure faults: errors that mean "a dependency (PostgreSQL, Redis) cannot be reached
 * right now", as opposed to a bug or a bad request. The error handler answers them with 503
 * `service_unavailable` and `Retry-After`; streams end with a "temporarily unavailable" event.
 *
 * Drivers wrap their errors (Drizzle's `DrizzleQueryError` carries the pg error as `cause`, pg-pool
 * wraps a connect timeout, `net` raises an AggregateError when every address of a host refuses),
 * so the whole `cause` / `errors` tree is searched.
 */

/** PostgreSQL SQLSTATEs that mean the server cannot serve us now (not that the query is wrong). */
const PG_UNAVAILABLE = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovery)
  '53300', // too_many_connections
]);
/** SQLSTATE class 08: connection exception. */
const PG_CONNECTION_CLASS = /^08[0-9A-Z]{3}$/;

/** Node's errno codes for a peer that is down, unreachable or went away. */
const NET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** Messages of driver errors that carry no code (pg, pg-pool, ioredis). Matched as prefixes. */
const UNAVAILABLE_MESSAGES = [
  // pg: the socket closed under a client ("... unexpectedly", "... due to connection timeout").
  'Connection terminated',
  // pg-pool: connectionTimeoutMillis passed while waiting for a client.
  'timeout exceeded when trying to connect',
  // pg: query_timeout passed (the server did not answer).
  'Query read timeout',
  // pg: a query on a client whose connection already failed.
  'Client has encountered a connection error',
  // ioredis: a command on a connection that was closed for good.
  'Connection is closed',
  // ioredis: enableOfflineQueue false and the connection is not ready.
  "Stream isn't writeable and enableOfflineQueue options is false",
  // ioredis: commandTimeout passed.
  'Command timed out',
];

const MAX_NODES = 32;

/** The first error in `error`'s tree (breadth-first through cause and errors) that `matches`. */
function findInTree(error: unknown, matches: (error: Error) => boolean): Error | undefined {
  const pending: unknown[] = [error];
  const seen = new Set<unknown>();
  while (pending.length && seen.size < MAX_NODES) {
    const current = pending.shift();
    if (!current || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    if (current instanceof Error && matches(current)) return current;
    const { cause, errors } = current as { cause?: unknown; errors?: unknown };
    if (cause !== undefined) pending.push(cause);
    if (Array.isArray(errors)) pending.push(...errors);
  }
  return undefined;
}

/** The recognised dependency fault inside `error`, if any (through cause and errors). */
export function findDependencyFault(error: unknown): Error | undefined {
  return findInTree(error, isFaultItself);
}

/**
 * PostgreSQL's disk_full (SQLSTATE 53100) inside `error`, if any: the database could not write
 * (a table or its log could not grow), so nothing was stored. The embedded database may stop
 * for good after it (db/client.ts); PostgreSQL's server carries on.
 */
export function findDiskFull(error: unknown): Error | undefined {
  return findInTree(error, (e) => (e as { code?: unknown }).code === '53100');
}

/** True when `error` (or anything it wraps) says PostgreSQL or Redis cannot be reached now. */
export function isDependencyUnavailable(error: unknown): boolean {
  return findDependencyFault(error) !== undefined;
}

/**
 * What may be logged about a dependency fault: the recognised cause's code and message only.
 * Never the wrapping error's message, which for Drizzle holds the SQL text and its parameters.
 */
export function describeDependencyFault(error: unknown): { code?: string; message: string } | undefined {
  const fault = findDependencyFault(error);
  if (!fault) return undefined;
  const code = (fault as { code?: unknown }).code;
  return { ...(typeof code === 'string' ? { code } : {}), message: fault.message.slice(0, 200) };
}

function isFaultItself(error: Error): boolean {
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'DependencyTimeoutError') return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NET_UNAVAILABLE.has(code) || PG_UNAVAILABLE.has(code) || PG_CONNECTION_CLASS.test(code)) return true;
  }
  // Drizzle's own wrapper starts with "Failed query:" and is never a fault by its message.
  const message = typeof error.message === 'string' ? error.message : '';
  return UNAVAILABLE_MESSAGES.some((prefix) => message.startsWith(prefix));
}

/**
 * Fields for a log line about `error`: a dependency fault is logged as its cause's code and
 * message only (`fault`); anything else as the error itself (`err`).
 */
export function faultLogFields(error: unknown): { fault: { code?: string; message: string } } | { err: unknown } {
  const fault = describeDependencyFault(error);
  return fault ? { fault } : { err: error };
}
