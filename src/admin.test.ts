import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../test/support/app.js';
import { recordUsage } from '../test/support/billing.js';
import { ingestFile } from '../test/support/documents.js';
import { newUser, newWorkspace } from '../test/support/factories.js';
import { deliver, nowSeconds, productObject, providerEvent, TEST_WEBHOOK_SECRET } from '../test/support/webhook.js';
import { runAdmin } from './admin.js';
import { ingestionTasks, documents } from './modules/documents/documents.table.js';
import { products } from './modules/billing/billing.table.js';
import { backgroundJobs } from './platform/queue/jobs.table.js';

const t = useTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });
const db = () => t.deps.database.db;

/** Runs one command line in-process against the test app's dependencies. */
async function admin(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(
    argv,
    { open: async () => t.deps, close: async () => undefined },
    { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } },
  );
  return { code, stdout, stderr, json: () => JSON.parse(stdout) as unknown };
}

const login = (email: string, password: string) => t.post('/auth/token/login/', { email, password });

describe('users', () => {
  it('create: a verified user with the given password', async () => {
    const run = await admin('--json', 'users', 'create', 'Ops.Person@Example.com', '--name', 'Ops Person', '--password', 'a-strong-password');
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toEqual({ id: expect.any(Number), email: 'ops.person@example.com', name: 'Ops Person', email_verified: true });
    const token = (await login('ops.person@example.com', 'a-strong-password')).json().auth_token as string;
    const me = await t.request('GET', '/auth/users/me/', { headers: { authorization: `Bearer ${token}` } });
    expect(me.json()).toMatchObject({ email: 'ops.person@example.com', email_verified: true });
  });

  it('create: a generated password is printed once and works', async () => {
    const run = await admin('users', 'create', 'gen@example.com');
    expect(run.code).toBe(0);
    const password = /password \(shown once\): (\S+)/.exec(run.stdout)?.[1];
    expect(password).toHaveLength(24);
    expect((await login('gen@example.com', password!)).statusCode).toBe(200);
  });

  it('create: a taken email or a weak password is an error on stderr, exit 1, no stack', async () => {
    await admin('users', 'create', 'dup@example.com', '--password', 'a-strong-password');
    const dup = await admin('users', 'create', 'dup@example.com', '--password', 'a-strong-password');
    expect(dup.code).toBe(1);
    expect(dup.stdout).toBe('');
    expect(dup.stderr).toMatch(/^error: .+\[email_taken\]\n$/);
    const weak = await admin('users', 'create', 'weak@example.com', '--password', '12345678901');
    expect(weak.code).toBe(1);
    expect(weak.stderr).toContain('entirely numeric');
    expect(weak.stderr).not.toMatch(/\n\s+at /);
    const bad = await admin('users', 'create', 'not-an-email');
    expect(bad).toMatchObject({ code: 1, stderr: expect.stringContaining('(email:') });
  });

  it('reset-password: the new password works and every session ends', async () => {
    const user = await newUser(t);
    expect((await t.get('/auth/users/me/', user)).statusCode).toBe(200);
    const run = await admin('--json', 'users', 'reset-password', user.email);
    expect(run.code, run.stderr).toBe(0);
    const { password } = run.json() as { password: string };
    expect((await t.get('/auth/users/me/', user)).statusCode).toBe(403);
    expect((await login(user.email, password)).statusCode).toBe(200);
    // By id, with a given password.
    expect((await admin('users', 'reset-password', String(user.id), '--password', 'another-password')).code).toBe(0);
    expect((await login(user.email, 'another-password')).statusCode).toBe(200);
    const missing = await admin('users', 'reset-password', 'nobody@example.com');
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining('[user_not_found]') });
  });
});

describe('workspaces and plan overrides', () => {
  it('workspaces list shows plan, override and this period’s usage', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner, 'Acme Research');
    await recordUsage(t, ws.id, 0.25);
    const table = await admin('workspaces', 'list');
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^id\s+name\s+owner\s+status\s+plan\s+override\s+subscription\s+credit_used\s+credit_limit\s+renews_at$/);
    expect(table.stdout).toContain('Acme Research');

    const set = await admin('plans', 'override', 'set', ws.id, 'team', '--until', '2099-12-31', '--reason', 'pilot');
    expect(set).toMatchObject({ code: 0, stdout: `workspace ${ws.id} now on team until 2099-12-31T23:59:59.999Z\n` });
    // A paid override without a subscription starts a credit month: the earlier 0.25 is not in it.
    await recordUsage(t, ws.id, 0.5);
    const listed = (await admin('--json', 'workspaces', 'list', '--search', 'acme')).json() as Array<Record<string, unknown>>;
    expect(listed).toEqual([
      {
        id: ws.id,
        name: 'Acme Research',
        owner: owner.email,
        status: 'active',
        plan: 'team',
        override: 'team until 2099-12-31T23:59:59.999Z',
        subscription: null,
        credit_used: 0.5,
        credit_limit: 40,
        renews_at: expect.any(String),
      },
    ]);
    expect((await t.get(`/api/workspaces/${ws.id}/plan/`, owner)).json().override).toEqual({
      plan: 'team',
      ends_at: '2099-12-31T23:59:59.999Z',
      reason: 'pilot',
    });

    expect((await admin('plans', 'override', 'clear', ws.id)).code).toBe(0);
    expect((await t.get(`/api/workspaces/${ws.id}/plan/`, owner)).json()).toMatchObject({ plan: { key: 'free' }, override: null });
    expect((await admin('plans', 'override', 'clear', ws.id)).stderr).toContain('[no_plan_override]');
  });

  it('refuses unknown plans, past or malformed dates and unknown workspaces', async () => {
    const ws = await newWorkspace(t, await newUser(t));
    expect((await admin('plans', 'override', 'set', ws.id, 'gold')).stderr).toContain('[unknown_plan]');
    expect((await admin('plans', 'override', 'set', ws.id, 'pro', '--until', '2001-01-01')).code).toBe(1);
    const malformed = await admin('plans', 'override', 'set', ws.id, 'pro', '--until', 'soon');
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain('Expected a date');
    expect((await admin('plans', 'override', 'set', '0190f7a0-0000-7000-8000-000000000000', 'pro')).stderr).toContain('[workspace_not_found]');
  });
});

describe('tasks', () => {
  it('lists a failed ingestion and re-drives it: a fresh delivery, the task reopened, the document ready', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const { document } = await ingestFile(t, ws.id, owner, { name: 'a.txt', contentType: 'text/plain', bytes: Buffer.from('hello operators') });
    const [job] = await db().select().from(backgroundJobs).where(eq(backgroundJobs.name, 'documents.ingest'));
    // As if the worker had given up on it (an outage outlasting the retries).
    await db()
      .update(backgroundJobs)
      .set({ state: 'failed', attempts: 3, lastError: 'storage unavailable', finishedAt: new Date() })
      .where(eq(backgroundJobs.id, job!.id));
    await db().update(ingestionTasks).set({ status: 'FAILURE', errorMessage: 'x' }).where(eq(ingestionTasks.documentId, document.id));
    await db().update(documents).set({ processingStatus: 'failed' }).where(eq(documents.id, document.id));

    const list = await admin('tasks', 'list', '--failed');
    expect(list.stdout).toContain(job!.id);
    expect(list.stdout).toContain('storage unavailable');
    expect(list.stdout).toContain('3/3');

    const run = await admin('--json', 'tasks', 'redrive', job!.id);
    expect(run.code, run.stderr).toBe(0);
    // On Redis it is delivered at once; the in-process queue of a CLI has no worker, so the outbox
    // mark is set for the reconciler of the process that runs jobs.
    const onRedis = t.deps.queue.kind === 'bullmq';
    expect(run.json()).toMatchObject({ id: job!.id, name: 'documents.ingest', previousState: 'failed', delivered: onRedis });
    if (!onRedis) await t.deps.jobs.reconcile();
    await t.deps.jobs.drain();
    const [after] = await db().select().from(backgroundJobs).where(eq(backgroundJobs.id, job!.id));
    expect(after).toMatchObject({ state: 'done', attempts: 1, redriven: 1 });
    expect(after!.deliveryId).not.toBe(job!.deliveryId);
    const status = (await t.get(`/api/workspaces/${ws.id}/documents/${document.id}/processing-status/`, owner)).json();
    expect(status.processing_status).toBe('ready');
    expect((await admin('tasks', 'list', '--failed')).stdout).toBe('(none)\n');
    expect((await admin('tasks', 'redrive', job!.id)).stderr).toContain('[job_finished]');
  });

  it('lists stuck tasks and refuses to re-drive a live run without --force', async () => {
    const jobId = '0190f7a0-0000-7000-8000-0000000000aa';
    await db().insert(backgroundJobs).values({
      id: jobId,
      name: 'chat.agent-reply',
      payload: { taskId: '0190f7a0-0000-7000-8000-0000000000bb' },
      state: 'running',
      attempts: 1,
      maxAttempts: 3,
      deliveryId: '0190f7a0-0000-7000-8000-0000000000cc',
      leaseUntil: new Date(Date.now() + 600_000),
      updatedAt: sql`now() - interval '30 minutes'`,
    });
    const stuck = (await admin('--json', 'tasks', 'list', '--stuck', '--older-than', '20')).json() as Array<{ id: string; state: string }>;
    expect(stuck).toEqual([expect.objectContaining({ id: jobId, state: 'running', attempts: '1/3' })]);
    expect((await admin('--json', 'tasks', 'list', '--older-than', '40')).json()).toEqual([]);

    const refused = await admin('tasks', 'redrive', jobId);
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining('[job_running]') });
    const forced = await admin('tasks', 'redrive', jobId, '--force');
    expect(forced.code, forced.stderr).toBe(0);
    const [row] = await db().select().from(backgroundJobs).where(eq(backgroundJobs.id, jobId));
    expect(row).toMatchObject({ redriven: 1 });
    expect(row!.deliveryId).not.toBe('0190f7a0-0000-7000-8000-0000000000cc');
    // On Redis the job is delivered at once, and the test app's worker may already have claimed it.
    if (t.deps.queue.kind !== 'bullmq') expect(row).toMatchObject({ state: 'queued', attempts: 1 });
    expect((await admin('tasks', 'redrive', '0190f7a0-0000-7000-8000-0000000000dd')).stderr).toContain('[job_not_found]');
    expect((await admin('tasks', 'list', '--stuck', '--failed')).code).toBe(1);
  });
});

describe('webhooks', () => {
  it('lists events with whether the payload is kept, and replays one', async () => {
    const event = providerEvent('product.created', productObject({ id: 'prod_cli', name: 'Pro', metadata: { plan: 'pro' } }), {
      created: nowSeconds() - 10,
    });
    expect((await deliver(t, event)).statusCode).toBe(200);
    const list = await admin('webhooks', 'list');
    expect(list.stdout).toMatch(new RegExp(`${event.id}\\s+product\\.created\\s+\\S+\\s+applied\\s+1\\s+-\\s+true`));
    const json = (await admin('--json', 'webhooks', 'list', '--outcome', 'applied')).json() as Array<{ id: string; payload: boolean }>;
    expect(json.map((e) => [e.id, e.payload])).toEqual([[event.id, true]]);

    await db().delete(products).where(eq(products.providerProductId, 'prod_cli'));
    const replay = await admin('webhooks', 'replay', event.id);
    expect(replay).toMatchObject({ code: 0, stdout: `event ${event.id} (product.created) replayed: applied (was applied)\n` });
    expect(await db().select().from(products).where(eq(products.providerProductId, 'prod_cli'))).toHaveLength(1);
    expect((await admin('webhooks', 'replay', 'evt_nope')).stderr).toContain('[webhook_event_not_found]');
    expect((await admin('webhooks', 'list', '--outcome', 'great')).code).toBe(1);
  });
});

describe('the command line itself', () => {
  const commands = [
    [],
    ['users'],
    ['users', 'create'],
    ['users', 'reset-password'],
    ['workspaces', 'list'],
    ['plans', 'override'],
    ['plans', 'override', 'set'],
    ['plans', 'override', 'clear'],
    ['tasks', 'list'],
    ['tasks', 'redrive'],
    ['webhooks', 'list'],
    ['webhooks', 'replay'],
  ];
  it.each(commands.map((c) => [c.join(' ') || '(root)', c]))('%s --help', async (_name, command) => {
    const run = await admin(...(command as string[]), '--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Usage: admin ${(command as string[]).join(' ')}`.trimEnd());
  });

  it('an unknown command or a missing argument: exit 1 with usage on stderr', async () => {
    const unknown = await admin('frobnicate');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
    const missing = await admin('webhooks', 'replay');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("missing required argument 'event-id'");
  });

  it('runs as a real process: --help, then a command on its own embedded database', { timeout: 120_000 }, () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'wsai-admin-'));
    const env = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'warn' };
    const node = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', path.join('src', 'admin.ts'), ...args], { env, encoding: 'utf8', timeout: 110_000 });
    try {
      const help = node('--help');
      expect(help.status, help.stderr).toBe(0);
      expect(help.stdout).toContain('Usage: admin [options] [command]');
      const created = node('--json', 'users', 'create', 'first@example.com', '--password', 'a-strong-password');
      expect(created.status, created.stderr).toBe(0);
      expect(JSON.parse(created.stdout)).toMatchObject({ email: 'first@example.com', email_verified: true });
      const again = node('users', 'create', 'first@example.com');
      expect(again.status).toBe(1);
      expect(again.stderr).toMatch(/^error: .*\[email_taken\]\n$/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
