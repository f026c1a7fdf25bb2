import { statfsSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';

/**
 * SQLSTATE 57P02 (crash_shutdown): what a statement gets once the embedded database has stopped;
 * the error handler answers it like an unreachable server (503 with Retry-After).
 */
export class EmbeddedDatabaseStoppedError extends Error {
  override readonly name = 'EmbeddedDatabaseStoppedError';
  readonly code = '57P02';
  constructor(cause: Error) {
    super('The embedded database stopped after a fatal error; the service must be restarted.', { cause });
  }
}

/** PostgreSQL's error severities after which a PGlite instance cannot run another statement. */
const FATAL_SEVERITIES = new Set(['PANIC', 'FATAL']);
const isFatal = (error: unknown): error is Error =>
  error instanceof Error && FATAL_SEVERITIES.has(String((error as { severity?: unknown }).severity));

type Statements = Pick<PGlite, 'query' | 'exec'>;

/**
 * Keeps a PGlite instance from being handed a statement after it stopped for good. After a
 * PANIC (e.g. its write-ahead log could not grow on a full disk) PGlite's next statement never
 * returns and holds the thread (its WebAssembly postgres loops). So statements go to it one at a
 * time through here (it runs them one at a time anyway), each after checking that it has not
 * stopped: the statement that met the stop gets its own error, every later one
 * EmbeddedDatabaseStoppedError at once, and `onStopped` is called once. Inside a transaction the
 * same holds per transaction, except that its statements never settle after the stop (PGlite
 * would otherwise send ROLLBACK) while the transaction's caller gets the error.
 *
 * Replaces `query`, `exec` and `transaction` on `client`, and a transaction's `query` and `exec`
 * (what drizzle and the migrations use; PGlite's other methods, such as `tx.sql` or `listen`,
 * are not guarded and not used). `wrapTransaction` is applied to each transaction's statements
 * after the guard's own (tracing).
 */
export function guardPglite(
  client: PGlite,
  options: { onStopped?: (error: Error) => void; wrapTransaction?: <T extends Statements>(tx: T) => T },
): { stopped(): boolean } {
  let stopped: Error | undefined;
  /** Fails the callers of the transactions under way (their callbacks may never settle). */
  const openTransactions = new Set<(error: Error) => void>();
  const noteFatal = (error: unknown) => {
    if (!isFatal(error) || stopped) return;
    stopped = error;
    for (const fail of openTransactions) fail(error);
    options.onStopped?.(error);
  };
  /** A queue run one statement after another; once stopped, `whenStopped()` instead (see above). */
  const serial = (whenStopped: () => Promise<never>, holdFatal: boolean) => {
    let tail: Promise<unknown> = Promise.resolve();
    return <R>(run: () => Promise<R>): Promise<R> => {
      const result = tail.then(async () => {
        if (stopped) return whenStopped();
        try {
          return await run();
        } catch (error) {
          noteFatal(error);
          if (stopped && holdFatal) return whenStopped();
          throw error;
        }
      });
      tail = result.then(
        () => undefined,
        () => undefined,
      );
      return result;
    };
  };
  const never = () => new Promise<never>(() => undefined);
  const guardStatements = <T extends Statements>(target: T, queue: ReturnType<typeof serial>): T => {
    const query = target.query.bind(target);
    const exec = target.exec.bind(target);
    target.query = ((...args: Parameters<PGlite['query']>) => queue(() => query(...args))) as T['query'];
    target.exec = ((...args: Parameters<PGlite['exec']>) => queue(() => exec(...args))) as T['exec'];
    return target;
  };
  const wrapTransaction = options.wrapTransaction ?? (<T>(tx: T) => tx);
  const outer = serial(() => Promise.reject(new EmbeddedDatabaseStoppedError(stopped!)), false);
  const transaction = client.transaction.bind(client);
  guardStatements(client, outer);
  client.transaction = (<T>(callback: Parameters<typeof transaction<T>>[0]) =>
    outer(
      () =>
        new Promise<T>((resolve, reject) => {
          openTransactions.add(reject);
          transaction<T>((tx) => callback(wrapTransaction(guardStatements(tx, serial(never, true)))))
            .then(resolve, reject)
            .finally(() => openTransactions.delete(reject));
        }),
    )) as typeof client.transaction;
  return { stopped: () => stopped !== undefined };
}

/** Below this much free space, a failure to open says how much is left (a full disk fails PGlite's start). */
const LOW_SPACE_BYTES = 64 * 1024 * 1024;

/** PGlite's failure to start in `dir`, with the free space of its file system when that is low. */
export function explainOpenFailure(dir: string, error: unknown): unknown {
  let free: number;
  try {
    const stats = statfsSync(dir);
    free = stats.bavail * stats.bsize;
  } catch {
    return error;
  }
  if (free >= LOW_SPACE_BYTES) return error;
  return new Error(`The embedded database in ${dir} could not start: its file system has ${Math.floor(free / 1024 / 1024)} MiB free (is the disk full?).`, {
    cause: error,
  });
}
