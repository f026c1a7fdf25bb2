import type pg from 'pg';
import { isServerError } from './errors.js';

/** A named statement with its values, as node-postgres takes it. */
export interface BatchedQuery {
  name: string;
  text: string;
  values: unknown[];
}

export interface StatementBatcher {
  query(config: BatchedQuery): Promise<{ rows: unknown[] }>;
  /** Ends the batch connection; statements still waiting fail. */
  close(): Promise<void>;
}

/**
 * Whether a statement sent alone failed by itself (a constraint, bad input), so running it again
 * would fail the same way: its caller gets that error as from the pool. Not so for errors of the
 * connection or of waiting: none from the server (the connection closed, a socket's error such as
 * EPIPE, whose code is five letters too, a client timeout), connection exceptions (08), operator
 * intervention (57: terminated, shutting down), a deadlock or serialisation failure (40), a lock
 * not obtained within lock_timeout (55P03).
 */
function ownError(error: unknown): boolean {
  if (!isServerError(error)) return false;
  const code = (error as { code: string }).code;
  return !['08', '57', '40'].includes(code.slice(0, 2)) && code !== '55P03';
}

/** Statements per transaction at most (a burst waits for the next one). */
const MAX_BATCH = 64;

interface Waiting {
  config: BatchedQuery;
  resolve(result: { rows: unknown[] }): void;
  reject(error: unknown): void;
}

/**
 * Group commit for statements that are each a whole unit of work (a payment webhook event's one
 * statement): while one batch is at PostgreSQL, the statements that arrive wait, and then go
 * together, in arrival order, as one transaction written in one go to a connection of their own
 * (node-postgres's pipeline mode: BEGIN, the statements, COMMIT, without waiting between them).
 * One write, one wake-up of the backend and one commit serve the whole batch, where each
 * statement paid for its own; a statement that arrives while nothing is in flight goes at once,
 * alone, without BEGIN or COMMIT (docs/decisions.md, "Group commit for the payment webhook").
 *
 * What a batched statement must allow: it may run in one transaction after other callers'
 * statements, seeing their writes as a later statement would; and it must be idempotent, because
 * when anything in a batch fails (one statement's error, a lock waited for longer than the
 * connection's lock_timeout, a deadlock with another transaction, the connection lost, maybe
 * after the commit) nothing of the batch is assumed to have happened and every statement of it
 * runs again alone on the pool (`runAlone`), whose answer, or error, is its caller's. A statement
 * sent alone that fails by itself (`ownError`) answers with that error, as from the pool;
 * otherwise it runs again on the pool too. So one statement's error stays its own, and a
 * statement stuck behind a lock waits on a connection of its own, as without batching.
 */
export function createStatementBatcher({
  connect,
  runAlone,
}: {
  /** Opens the batch connection (node-postgres with `pipeline: true`). */
  connect: () => Promise<pg.Client>;
  /** Runs one statement by itself (the pool). */
  runAlone: (config: BatchedQuery) => Promise<{ rows: unknown[] }>;
}): StatementBatcher {
  const queue: Waiting[] = [];
  let lane: pg.Client | undefined;
  let opening: Promise<pg.Client> | undefined;
  let sending = false;
  let closed = false;

  function laneClient(): Promise<pg.Client> {
    if (lane) return Promise.resolve(lane);
    opening ??= connect()
      .then((client) => {
        // A lost connection is dropped here; its statements fail and run again alone (above).
        const drop = () => {
          if (lane === client) lane = undefined;
        };
        client.on('error', drop);
        client.on('end', drop);
        if (closed) {
          void client.end().catch(() => undefined);
          throw new Error('The database is closed');
        }
        lane = client;
        return client;
      })
      .finally(() => {
        opening = undefined;
      });
    return opening;
  }

  async function sendBatches(): Promise<void> {
    if (sending) return;
    sending = true;
    try {
      while (queue.length > 0 && !closed) await send(queue.splice(0, MAX_BATCH));
    } finally {
      sending = false;
    }
    if (closed) for (const waiting of queue.splice(0)) waiting.reject(new Error('The database is closed'));
  }

  async function send(batch: Waiting[]): Promise<void> {
    let client: pg.Client;
    try {
      client = await laneClient();
    } catch {
      batch.forEach(runAloneFor);
      return;
    }
    if (batch.length === 1) {
      const [only] = batch as [Waiting];
      await client.query(only.config).then(only.resolve, (error: unknown) => (ownError(error) ? only.reject(error) : runAloneFor(only)));
      return;
    }
    // One write for the whole transaction: the socket holds what the queries below write until
    // uncorked (node-postgres corks and uncorks around each statement too; corks nest).
    const socket = (client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection?.stream;
    socket?.cork?.();
    const begin = client.query('BEGIN');
    const statements = batch.map((waiting) => client.query(waiting.config));
    const commit = client.query('COMMIT');
    socket?.uncork?.();
    const [began, committed, ...results] = await Promise.allSettled([begin, commit, ...statements]);
    // COMMIT of a transaction that failed part-way answers ROLLBACK, without an error.
    const ok =
      began.status === 'fulfilled' &&
      committed.status === 'fulfilled' &&
      committed.value.command === 'COMMIT' &&
      results.every((result) => result.status === 'fulfilled');
    if (!ok) {
      batch.forEach(runAloneFor);
      return;
    }
    batch.forEach((waiting, i) => waiting.resolve((results[i] as PromiseFulfilledResult<pg.QueryResult>).value));
  }

  // Not awaited: the pool runs it while the batches behind go on (it may wait for a lock).
  const runAloneFor = (waiting: Waiting): void => void runAlone(waiting.config).then(waiting.resolve, waiting.reject);

  return {
    query(config) {
      if (closed) return Promise.reject(new Error('The database is closed'));
      return new Promise((resolve, reject) => {
        queue.push({ config, resolve, reject });
        void sendBatches();
      });
    },
    async close() {
      closed = true;
      const client = lane ?? (await opening?.catch(() => undefined));
      lane = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
