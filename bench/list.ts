/**
 * Chat list benchmark: `GET /api/workspaces/{ws}/chats/` as a plain member of a workspace with 20
 * members and 2,000 chats, of which 291 are visible to that member (100 their own, 100 public
 * chats of others, 91 private chats of others shared with them; the rest private chats of the
 * other members, some shared with others), next to a bare Fastify route in the same run. Also
 * counts the SQL statements each list request runs.
 *
 *   npm run bench:list [-- --chats 100000 --duration 10 --connections 50 --no-record]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:list
 *
 * Without DATABASE_URL the app runs on an embedded PGlite database in a temporary directory; with
 * it (which names the server only) on a fresh database created there and dropped at the end.
 * Users beyond the two made through the API, memberships, chats and shares are inserted in bulk
 * with SQL. All traffic goes to 127.0.0.1. Results are printed and appended to bench/RESULTS.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type autocannon from 'autocannon';
import { sql } from 'drizzle-orm';
import Fastify from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/env.js';
import { observeStatements, queryRows } from '../src/db/client.js';
import { createDeps } from '../src/deps.js';
import { createLogger } from '../src/platform/logger.js';
import { currentRequestContext } from '../src/platform/request-context.js';
import {
  appendResults,
  call,
  createBenchDatabase,
  fmt,
  listen,
  LOAD_OPTIONS,
  LOAD_TABLE_HEAD,
  type LoadTarget,
  loadAverage,
  loadCells,
  loadSettings,
  machineLine,
  measureLoad,
  positiveInt,
  reportFailures,
} from './support.js';

const { values: args } = parseArgs({
  options: {
    chats: { type: 'string', default: process.env.BENCH_CHATS ?? '2000' },
    ...LOAD_OPTIONS,
  },
  allowPositionals: false,
});
const chatCount = positiveInt('chats', args.chats, 291);
const load = loadSettings(args);
const say = (line: string) => process.stdout.write(`${line}\n`);

const MEMBERS = 20;
// The member's view: their own chats, public chats of others, private chats of others shared with them.
const OWN = 100;
const PUBLIC = 100;
const SHARED = 91;
const VISIBLE = OWN + PUBLIC + SHARED;

/**
 * Statements counted as the app issues them (either profile). Outside the measured run only
 * those inside a request's context count (the one listed request), during it every statement
 * (`countAll`, see below).
 */
const statements = { count: 0, texts: [] as string[], keepTexts: false, countAll: false };
observeStatements((text) => {
  if (!statements.countAll && !currentRequestContext()) return;
  statements.count += 1;
  if (statements.keepTexts) statements.texts.push(text.replace(/\s+/g, ' ').slice(0, 160));
});

const loadAtStart = loadAverage();
const benchDatabase = process.env.DATABASE_URL ? await createBenchDatabase(process.env.DATABASE_URL, 'wsai_bench_list') : undefined;
const databaseLabel = benchDatabase?.label ?? 'PGlite (embedded, temporary directory)';
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'wsai-bench-list-'));
const config = loadConfig({
  ...process.env,
  LOG_LEVEL: 'silent',
  DATA_DIR: dataDir,
  ALLOW_SIGNUP: 'true',
  DATABASE_URL: benchDatabase?.url ?? '',
  SECRET_KEY: `bench-secret-${randomBytes(16).toString('hex')}`,
});
say(`starting the app on ${databaseLabel} (migrations run on start-up)...`);
const deps = await createDeps(config, createLogger('silent'));
const app = await buildApp(deps);
// The same app on the same database without the chat-list page cache (credentials and
// memberships still cached): every list request reads the database, as after every change to
// the workspace's chats.
const uncachedDeps = await createDeps(config, createLogger('silent'), { database: deps.database, chatListCache: false });
const uncachedApp = await buildApp(uncachedDeps);
const bare = Fastify({ logger: false });
bare.get('/bare', async () => ({ id: 1, email: 'bench@example.com', name: 'Bench User' }));
const db = deps.database.db;

async function account(base: string, label: string): Promise<{ id: number; token: string }> {
  const email = `${label}-${randomBytes(4).toString('hex')}@bench.test`;
  const password = `pw-${randomBytes(12).toString('hex')}`;
  const registered = await call(base, 'POST', '/auth/users/', { email, password, name: label });
  if (registered.status !== 201) throw new Error(`registration failed: ${registered.status} ${JSON.stringify(registered.body)}`);
  const login = await call(base, 'POST', '/auth/token/login/', { email, password });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`);
  return { id: registered.body.id as number, token: login.body.auth_token as string };
}

/**
 * 18 more users and every membership; `chatCount` chats whose `updated_at` are a permutation of
 * minutes, so the member's chats are spread over the whole list, not bunched at one end.
 */
async function seed(workspaceId: string, memberId: number): Promise<void> {
  await db.execute(sql`
    INSERT INTO users (email, name, password_hash)
    SELECT 'user' || g || '-' || ${randomBytes(4).toString('hex')} || '@bench.test', 'User ' || g, 'x'
    FROM generate_series(1, ${MEMBERS - 2}) g`);
  await db.execute(sql`
    INSERT INTO workspace_memberships (workspace_id, user_id, role)
    SELECT ${workspaceId}::uuid, u.id, 'member' FROM users u
    WHERE (u.email LIKE 'user%@bench.test' OR u.id = ${memberId})
      AND NOT EXISTS (SELECT 1 FROM workspace_memberships m WHERE m.workspace_id = ${workspaceId}::uuid AND m.user_id = u.id)`);
  const members = await queryRows<{ user_id: number }>(
    db,
    sql`SELECT user_id FROM workspace_memberships WHERE workspace_id = ${workspaceId}::uuid ORDER BY user_id`,
  );
  if (members.length !== MEMBERS) throw new Error(`expected ${MEMBERS} members, found ${members.length}`);
  const others = `{${members.map((m) => m.user_id).filter((id) => id !== memberId).join(',')}}`;
  await db.execute(sql`
    INSERT INTO chat_sessions (workspace_id, owner_id, name, ai_model, ai_provider, is_public, created_at, updated_at)
    SELECT ${workspaceId}::uuid,
           CASE WHEN g < ${OWN} THEN ${memberId} ELSE (${others}::int[])[1 + g % ${MEMBERS - 1}] END,
           'Chat ' || g, 'gpt-4o-mini', 'openai', g >= ${OWN} AND g < ${OWN + PUBLIC},
           now() - ((g::bigint * 7919) % ${chatCount}) * interval '1 minute' - interval '1 day',
           now() - ((g::bigint * 7919) % ${chatCount}) * interval '1 minute'
    FROM generate_series(0, ${chatCount - 1}) g`);
  // The numbering of the insert above, recovered from the name: shared with the member, and
  // every tenth private chat of another member shared with a third member.
  await db.execute(sql`
    INSERT INTO chat_shares (session_id, user_id, created_by)
    SELECT c.id, ${memberId}, c.owner_id FROM chat_sessions c
    WHERE c.workspace_id = ${workspaceId}::uuid AND substr(c.name, 6)::int >= ${OWN + PUBLIC}
      AND substr(c.name, 6)::int < ${VISIBLE}`);
  await db.execute(sql`
    INSERT INTO chat_shares (session_id, user_id, created_by)
    SELECT c.id, (${others}::int[])[1 + (substr(c.name, 6)::int + 1) % ${MEMBERS - 1}], c.owner_id FROM chat_sessions c
    WHERE c.workspace_id = ${workspaceId}::uuid AND substr(c.name, 6)::int >= ${VISIBLE}
      AND substr(c.name, 6)::int % 10 = 0`);
  // As autovacuum would have by then: statistics and the visibility map (index-only scans).
  await db.execute(sql`VACUUM ANALYZE chat_sessions`);
  await db.execute(sql`VACUUM ANALYZE chat_shares`);
  await db.execute(sql`VACUUM ANALYZE workspace_memberships`);
}

interface Row {
  target: LoadTarget;
  result: autocannon.Result;
  /** SQL statements per request (app only). */
  perRequest?: number;
}

function table(rows: Row[]): string {
  return [
    `${LOAD_TABLE_HEAD} SQL statements per request |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(({ target, result, perRequest }) => `${loadCells(target, result)} ${perRequest === undefined ? '–' : fmt(perRequest, 2)} |`),
  ].join('\n');
}

try {
  const appUrl = await listen(app);
  const bareUrl = await listen(bare);
  const owner = await account(appUrl, 'owner');
  const member = await account(appUrl, 'member');
  const workspace = await call(appUrl, 'POST', '/api/workspaces/', { name: 'Bench' }, owner.token);
  if (workspace.status !== 201) throw new Error(`workspace: ${workspace.status} ${JSON.stringify(workspace.body)}`);
  const workspaceId = workspace.body.id as string;
  say(`inserting ${MEMBERS} members, ${fmt(chatCount)} chats (${VISIBLE} visible to the member) and their shares...`);
  const seedStarted = performance.now();
  await seed(workspaceId, member.id);
  const seedSeconds = (performance.now() - seedStarted) / 1000;

  const listPath = `/api/workspaces/${workspaceId}/chats/`;
  statements.keepTexts = true;
  const before = statements.count;
  const probe = await call(appUrl, 'GET', listPath, undefined, member.token);
  statements.keepTexts = false;
  if (probe.status !== 200) throw new Error(`GET ${listPath} answered ${probe.status}: ${JSON.stringify(probe.body)}`);
  if (probe.body.count !== VISIBLE || (probe.body.results as unknown[]).length !== 50) {
    throw new Error(`expected ${VISIBLE} visible chats and a page of 50, got count ${String(probe.body.count)}`);
  }
  const probeStatements = statements.texts.slice(0);
  say(`one list request ran ${statements.count - before} statements:`);
  for (const text of probeStatements) say(`  ${text}`);

  const rows: Row[] = [];
  const bareTarget: LoadTarget = { label: 'bare Fastify', url: bareUrl, path: '/bare', headers: {} };
  rows.push({ target: bareTarget, result: await measureLoad(bareTarget, load) });
  const listTarget: LoadTarget = {
    label: 'app (member)',
    url: appUrl,
    path: '/api/workspaces/{ws}/chats/',
    headers: { authorization: `Bearer ${member.token}` },
  };
  let counted = 0;
  // Over the measured run every statement counts, whatever async context issues it: once the pool
  // queues, a request's statement is sent from the callback of whichever query freed a connection,
  // outside its own request's context. (Most requests run none: the page is cached per member.)
  const result = await measureLoad({ ...listTarget, path: listPath }, load, () => {
    statements.countAll = true;
    counted = statements.count;
  });
  statements.countAll = false;
  rows.push({ target: listTarget, result, perRequest: (statements.count - counted) / Math.max(1, result.requests.total) });
  const uncachedTarget: LoadTarget = { ...listTarget, label: 'app (member), page not cached', url: await listen(uncachedApp) };
  const uncached = await measureLoad({ ...uncachedTarget, path: listPath }, load, () => {
    statements.countAll = true;
    counted = statements.count;
  });
  statements.countAll = false;
  rows.push({ target: uncachedTarget, result: uncached, perRequest: (statements.count - counted) / Math.max(1, uncached.requests.total) });

  say(`\n${machineLine()}\n${databaseLabel}; ${fmt(chatCount)} chats; ${load.connections} connections\n\n${table(rows)}\n`);
  const failed = reportFailures(rows);
  if (args['no-record']) say('not recorded (--no-record)');
  else {
    appendResults(`chat list (${benchDatabase ? 'PostgreSQL' : 'PGlite'}, ${fmt(chatCount)} chats)`, [
      '`npm run bench:list` (see bench/README.md).',
      '',
      machineLine(),
      `- database: ${databaseLabel}; load average ${loadAtStart} at the start, ${loadAverage()} at the end`,
      `- data: one workspace, ${MEMBERS} members, ${fmt(chatCount)} chats; the member sees ${VISIBLE} (${OWN} own, ${PUBLIC} public, ${SHARED} shared with them); written in ${fmt(seedSeconds, 1)} s`,
      `- settings: ${load.connections} connections, ${load.warmup} s warm-up + ${load.duration} s per target, ${load.workers} autocannon worker thread(s), default page (50); statements counted in-process: every statement the app issued over the measured run (background work included; by request context for the one request listed below)`,
      `- statements of one request: ${probeStatements.map((text) => `\`${text.slice(0, 60)}…\``).join('; ')}`,
      '',
      table(rows),
    ]);
  }
  if (failed) process.exitCode = 1;
} finally {
  await bare.close();
  await uncachedApp.close();
  await uncachedDeps.close();
  await app.close();
  await deps.close();
  await benchDatabase?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
