/**
 * What both database clients (db/client.ts's PGlite, db/postgres.ts's PostgreSQL) share about
 * the statements they issue: who observes them, how a statement's span is named, and which
 * databases prepare their hot statements on the server.
 */

/** Who is told of every statement as it is issued (benchmarks count them); empty in production. */
const statementObservers = new Set<(text: string) => void>();

/** Calls `observer` with the text of every statement the app issues, on either profile, until the returned stop is called. */
export function observeStatements(observer: (text: string) => void): () => void {
  statementObservers.add(observer);
  return () => statementObservers.delete(observer);
}

/** Whether anyone observes statements (so that a caller builds the text only then). */
export const observingStatements = (): boolean => statementObservers.size > 0;

/** Tells the observers of a statement. */
export function reportStatement(text: string): void {
  for (const observe of statementObservers) observe(text);
}

/** A statement's span name: its first keyword (SELECT, INSERT, ...). */
export const statementName = (text: string) => /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';

/** A statement's span attributes: its text without the parameters, which may be personal data. */
export const statementAttributes = (text: string) => ({ 'db.system.name': 'postgresql', 'db.query.text': text.slice(0, 2000) });

/** The PostgreSQL databases (their `$client` is a postgres.js `sql`): preparedStatement prepares their statements. */
const postgresDatabases = new WeakSet<object>();
export const markPostgres = (db: object): void => void postgresDatabases.add(db);
export const isPostgres = (db: object): boolean => postgresDatabases.has(db);
