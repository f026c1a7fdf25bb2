/**
 * Run by src/db/pglite.faults.test.ts in a child process (a regression could leave PGlite looping
 * on the thread, which no test timeout in that process would end): the embedded database in
 * `<dir>/db` on a file system that the script fills up. Prints one JSON line of outcomes.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import Fastify from 'fastify';
import { openPglite } from '../../src/db/client.js';
import { registerErrorHandler } from '../../src/platform/error-handler.js';
import { fillFileSystem } from './full-disk.js';

const dir = process.argv[2]!;
/** What a caller sees of an error (drizzle's "Failed query: ..." wrapper stands for its cause). */
const outcome = (error: unknown) => {
  const wrapped = error instanceof Error && error.message.startsWith('Failed query:');
  const found = wrapped ? error.cause : error;
  const { name, code, severity, message } = found as { name?: string; code?: string; severity?: string; message?: string };
  return { name, code, severity, ...(process.env.DEBUG_SCENARIO ? { message } : {}) };
};

const stops: unknown[] = [];
const database = await openPglite(path.join(dir, 'db'), { onStopped: (error) => stops.push(outcome(error)) });
const { client, db } = database;
await client.exec('CREATE TABLE notes (id serial PRIMARY KEY, body text); CREATE TABLE marks (id int PRIMARY KEY, round int)');
await client.query("INSERT INTO notes (body) VALUES ('kept')");
await client.query('INSERT INTO marks VALUES (1, -1)');
const filler = path.join(dir, 'filler');
fillFileSystem(filler);

const result: Record<string, unknown> = {};
// A write that needs new pages: an error, and the database carries on.
try {
  await client.query('INSERT INTO notes (body) SELECT repeat(md5(random()::text), 300) FROM generate_series(1, 2000)');
  result.largeInsert = 'stored';
} catch (error) {
  result.largeInsert = outcome(error);
}
result.readAfterLargeInsert = (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM notes')).rows[0]!.n;
result.stopsAfterLargeInsert = stops.length;

// The log cannot grow: a statement that needs a new segment (a switch, or the next write after
// one) meets a PANIC, returned as its error. Rounds alternate a small update in place (on a table
// the failed insert left alone) and a switch, each with a statement and a transaction queued
// behind it. (A PANIC met by a transaction's COMMIT is not returned at all by PGlite 0.5: its
// thread loops; see docs/operations.md, "Failures and what happens".)
const started = performance.now();
result.committedRound = -1;
let metStop: unknown;
for (let round = 0; round < 12 && stops.length === 0; round++) {
  const update = round % 2 === 0;
  const value = round / 2;
  // Straight to the client, so the statement is in the queue before the two behind it.
  const statement = update ? client.query('UPDATE marks SET round = $1 WHERE id = 1', [value]) : client.query('SELECT pg_switch_wal()');
  const queued = client.query('SELECT 1');
  const queuedTransaction = db.transaction((tx) => tx.execute(sql`SELECT 1`));
  const settled = await Promise.allSettled([statement, queued, queuedTransaction]);
  if (update && settled[0]!.status === 'fulfilled') result.committedRound = value;
  if (settled[0]!.status === 'rejected') metStop = settled[0].reason;
  result.lastRound = settled.map((s) => (s.status === 'fulfilled' ? 'ok' : outcome(s.reason)));
}
result.stops = stops;
result.afterStop = await Promise.allSettled([client.query('SELECT 1'), database.ping(), db.transaction((tx) => tx.execute(sql`SELECT 1`))]).then((all) =>
  all.map((s) => (s.status === 'fulfilled' ? 'ok' : outcome(s.reason))),
);
const refusedAfterStop = await db.execute(sql`SELECT 1`).catch((error: unknown) => error);
await database.close();
result.stoppedWithinMs = Math.round(performance.now() - started);

// What a request is answered with, through the service's error handler: the statement that met
// the stop (disk full: 507), a statement refused after it (503, though it carries the PANIC as its cause).
const app = Fastify();
registerErrorHandler(app);
app.get('/met', async () => Promise.reject(metStop));
app.get('/refused', async () => Promise.reject(refusedAfterStop));
result.answers = {};
for (const url of ['/met', '/refused']) {
  const res = await app.inject({ method: 'GET', url });
  (result.answers as Record<string, unknown>)[url] = { status: res.statusCode, code: res.json().code, retryAfter: res.headers['retry-after'] };
}
await app.close();

// Another database cannot even start on the full disk, and says why.
result.openOnFullDisk = await openPglite(path.join(dir, 'other')).then(
  () => 'opened',
  (error: Error) => error.message,
);

// With room again, the database opens and has what was committed.
rmSync(filler);
const reopened = await openPglite(path.join(dir, 'db'));
result.reopened = {
  notes: (await reopened.client.query<{ body: string }>('SELECT body FROM notes ORDER BY id')).rows.map((r) => r.body),
  round: (await reopened.client.query<{ round: number }>('SELECT round FROM marks')).rows[0]!.round,
};
await reopened.client.query("INSERT INTO notes (body) VALUES ('after')");
await reopened.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
