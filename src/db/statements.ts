import { SpanKind } from '@opentelemetry/api';
import { tracingEnabled, withSpan } from '../platform/tracing.js';
import type { StatementBatcher } from './statement-batch.js';

/**
 * What both database clients (db/client.ts's PGlite, db/postgres.ts's PostgreSQL) share about
 * the statements they issue: who observes them, their spans, and which databases name their hot
 * statements on the server.
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

const TRACED = Symbol('traced queries');

/**
 * Wraps `query` (PGlite's, a pg pool's or pool client's, as drizzle calls it): tells the statement
 * observers, and makes one CLIENT span per statement (`db.query.text` without the parameters,
 * which may be personal data). Installed always, traced only while tracing is on (a boolean test
 * per query otherwise); callback calls pass through.
 */
export function traceQueries<T extends { query: (...args: never[]) => unknown }>(target: T): T {
  const marked = target as T & { [TRACED]?: true };
  if (marked[TRACED]) return target;
  marked[TRACED] = true;
  const original = target.query.bind(target) as (...args: unknown[]) => unknown;
  (target as { query: unknown }).query = (...args: unknown[]) => {
    if (typeof args[args.length - 1] === 'function') return original(...args);
    const first = args[0];
    const textOf = () => (typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? ''));
    if (observingStatements()) reportStatement(textOf());
    if (!tracingEnabled()) return original(...args);
    const text = textOf();
    return withSpan(statementName(text), { kind: SpanKind.CLIENT, attributes: statementAttributes(text) }, () => original(...args) as Promise<unknown>);
  };
  return target;
}

/** The PostgreSQL databases (their `$client` is a pg pool): preparedStatement names their statements. */
const postgresDatabases = new WeakSet<object>();
export const markPostgres = (db: object): void => void postgresDatabases.add(db);
export const isPostgres = (db: object): boolean => postgresDatabases.has(db);

/** Each PostgreSQL database's group commit for batched statements (db/statement-batch.ts). */
const batchers = new WeakMap<object, StatementBatcher>();
export const attachBatcher = (db: object, batcher: StatementBatcher): void => void batchers.set(db, batcher);
export const batcherOf = (db: object): StatementBatcher | undefined => batchers.get(db);
