import { realpathSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { loadConfig } from './config/env.js';
import { resolveSecretKey } from './config/secret-key.js';
import { createDeps, type Deps } from './deps.js';
import { createLogger } from './platform/logger.js';
import { AppError } from './platform/errors.js';

/**
 * The operators' command line: `npm run admin -- <command>` (see docs/operations.md, "Admin CLI").
 * Every command is a call to a module's service; this file only parses arguments and prints.
 * It opens the same configuration, database and adapters as the service (src/deps.ts), runs no
 * job worker, and closes them before it exits.
 */

export interface AdminIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** Opens the dependencies on first use (`--help` never touches the database); `close` ends them. */
export interface DepsSource {
  open(): Promise<Deps>;
  close(): Promise<void>;
}

type Row = Record<string, string | number | boolean | null>;

const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

/** Left-aligned columns with a header row; `(none)` for an empty list. */
export function formatTable(rows: Row[]): string {
  if (rows.length === 0) return '(none)\n';
  const columns = Object.keys(rows[0]!);
  const cell = (value: Row[string]) => (value === null ? '-' : String(value));
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => cell(row[column] ?? null).length)));
  const line = (values: string[]) => values.map((value, i) => value.padEnd(widths[i]!)).join('  ').trimEnd();
  return `${[line(columns), ...rows.map((row) => line(columns.map((column) => cell(row[column] ?? null))))].join('\n')}\n`;
}

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('Expected a positive integer.');
  return n;
};

/** A date (`2026-12-31`, the end of that UTC day) or an ISO instant. */
const futureDate = (value: string) => {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T23:59:59.999Z`) : new Date(value);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError('Expected a date (2026-12-31) or an ISO date-time.');
  return date;
};

/**
 * Runs one command line (`argv` without `node` and the script) against `source` and returns the
 * exit code: 0, or 1 with a message on stderr (never a stack trace for a user's mistake).
 */
export async function runAdmin(argv: string[], source: DepsSource, io: AdminIo): Promise<number> {
  const program = new Command('admin');
  let json = false;
  const deps = () => source.open();
  /** Prints a list as a table, or as JSON with `--json`. */
  const printRows = (rows: Row[]) => io.stdout.write(json ? `${JSON.stringify(rows, null, 2)}\n` : formatTable(rows));
  /** Prints one result: JSON with `--json`, else the human line. */
  const printResult = (result: object, human: string) => io.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : `${human}\n`);
  const operator = `admin-cli:${os.userInfo().username}`;

  program
    .description('Operator commands for the workspace AI service (same configuration and database as the service).')
    .option('--json', 'print machine-readable JSON instead of tables')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) })
    .hook('preAction', (command) => {
      json = Boolean(command.optsWithGlobals().json);
    });

  // --- users ------------------------------------------------------------------------------------
  const users = program.command('users').description('create users, reset passwords');
  users
    .command('create')
    .description('create a user whose email counts as verified; the password is generated and printed once unless given')
    .argument('<email>', 'email address')
    .option('--name <name>', 'display name', '')
    .option('--password <password>', 'password (8-128 characters, not all digits); generated when omitted')
    .action(async (email: string, options: { name: string; password?: string }) => {
      const { user, password, generated } = await (await deps()).services.auth.createVerifiedUser({ email, name: options.name, password: options.password });
      printResult(
        { ...user, email_verified: true, ...(generated ? { password } : {}) },
        `created user ${user.id} <${user.email}> (email verified)${generated ? `\npassword (shown once): ${password}` : ''}`,
      );
    });
  users
    .command('reset-password')
    .description('set a new password (generated and printed once unless given); ends every session and revokes API keys')
    .argument('<user>', 'email address or user id')
    .option('--password <password>', 'the new password; generated when omitted')
    .action(async (who: string, options: { password?: string }) => {
      const { user, password, generated } = await (await deps()).services.auth.resetPasswordAsOperator(who, options.password);
      printResult(
        { ...user, sessions_ended: true, ...(generated ? { password } : {}) },
        `password of user ${user.id} <${user.email}> reset; sessions ended, API keys revoked${generated ? `\npassword (shown once): ${password}` : ''}`,
      );
    });

  // --- workspaces -------------------------------------------------------------------------------
  program
    .command('workspaces')
    .description('workspaces with their plan')
    .command('list')
    .description("list workspaces with their plan (override included) and this credit period's usage")
    .option('--search <text>', 'match name, slug or owner email')
    .option('--limit <n>', 'at most this many', positiveInt, 100)
    .option('--offset <n>', 'skip this many', (v) => Number(v), 0)
    .action(async (options: { search?: string; limit: number; offset: number }) => {
      const d = await deps();
      const rows: Row[] = [];
      for (const ws of await d.services.workspaces.listAll(options)) {
        const billing = await d.services.plan.overview({ id: ws.id, ownerId: ws.owner });
        rows.push({
          id: ws.id,
          name: ws.name,
          owner: ws.ownerEmail,
          status: ws.status,
          plan: billing.plan,
          override: billing.override ? `${billing.override.plan} until ${iso(billing.override.endsAt) ?? 'cleared'}` : null,
          subscription: billing.subscriptionStatus,
          credit_used: billing.creditUsed,
          credit_limit: billing.creditLimit,
          renews_at: iso(billing.renewsAt),
        });
      }
      printRows(rows);
    });

  // --- plans ------------------------------------------------------------------------------------
  const override = program
    .command('plans')
    .description('plans granted without the payment provider')
    .command('override')
    .description("set or clear a workspace's plan override");
  override
    .command('set')
    .description("grant a plan to a workspace, over its subscription's plan, until --until or until cleared")
    .argument('<workspace-id>', 'workspace id')
    .argument('<plan>', 'free, pro, team or business')
    .option('--until <date>', 'end (a date counts to its end, UTC, or an ISO date-time)', futureDate)
    .option('--reason <text>', 'why (kept with the override)', '')
    .action(async (workspaceId: string, plan: string, options: { until?: Date; reason: string }) => {
      const view = await (await deps()).services.planOverrides.set(workspaceId, {
        plan,
        endsAt: options.until ?? null,
        reason: options.reason,
        createdBy: operator,
      });
      printResult({ workspace: workspaceId, ...view }, `workspace ${workspaceId} now on ${view.plan} until ${view.ends_at ?? 'cleared'}`);
    });
  override
    .command('clear')
    .description('remove the override; the subscription decides the plan again')
    .argument('<workspace-id>', 'workspace id')
    .action(async (workspaceId: string) => {
      await (await deps()).services.planOverrides.clear(workspaceId);
      printResult({ workspace: workspaceId, cleared: true }, `override of workspace ${workspaceId} cleared`);
    });

  // --- tasks ------------------------------------------------------------------------------------
  const tasks = program.command('tasks').description('background tasks (document ingestion, agent replies)');
  tasks
    .command('list')
    .description('list stuck (queued or running with no change for --older-than minutes) or failed tasks')
    .option('--stuck', 'only stuck tasks (the default)')
    .option('--failed', 'only failed tasks')
    .option('--older-than <minutes>', 'a task counts as stuck after this long without a change', positiveInt, 15)
    .option('--name <job>', 'only this job (documents.ingest, chat.agent-reply)')
    .option('--limit <n>', 'at most this many', positiveInt, 50)
    .action(async (options: { stuck?: boolean; failed?: boolean; olderThan: number; name?: string; limit: number }) => {
      if (options.stuck && options.failed) throw new InvalidArgumentError('Choose --stuck or --failed, not both.');
      const jobs = await (await deps()).jobs.listJobs({
        which: options.failed ? 'failed' : 'stuck',
        olderThanMinutes: options.olderThan,
        name: options.name,
        limit: options.limit,
      });
      printRows(
        jobs.map((job) => ({
          id: job.id,
          job: job.name,
          state: job.state,
          attempts: `${job.attempts}/${job.maxAttempts}`,
          redriven: job.redriven,
          lease_until: iso(job.leaseUntil),
          updated_at: iso(job.updatedAt),
          last_error: job.lastError ? job.lastError.slice(0, 120) : null,
        })),
      );
    });
  tasks
    .command('redrive')
    .description('deliver a stuck or failed task again under a fresh delivery (a failed one gets a fresh retry budget)')
    .argument('<task-id>', 'task id (the id shown by tasks list)')
    .option('--force', 're-drive a running task even though its lease has not run out (its run is fenced out)')
    .action(async (id: string, options: { force?: boolean }) => {
      const d = await deps();
      // Without Redis nothing in this process runs jobs: the running service's reconciler delivers it.
      const deliverNow = d.queue.kind !== 'memory';
      const result = await d.jobs.redrive(id, { force: options.force, deliverNow });
      printResult(
        { ...result, delivered: deliverNow },
        `task ${result.id} (${result.name}, was ${result.previousState}) queued again` +
          (deliverNow ? '' : '; the service delivers it at its next reconciler pass (JOB_RECONCILE_INTERVAL_SECONDS)'),
      );
    });

  // --- webhooks ---------------------------------------------------------------------------------
  const webhooks = program.command('webhooks').description('payment webhook events');
  webhooks
    .command('list')
    .description('list received events, newest first, with whether their payload is still kept')
    .option('--type <type>', 'only this event type')
    .option('--outcome <outcome>', 'only this outcome (applied, stale, ignored, skipped, unhandled, failed)')
    .option('--limit <n>', 'at most this many', positiveInt, 50)
    .action(async (options: { type?: string; outcome?: string; limit: number }) => {
      const outcomes = ['applied', 'stale', 'ignored', 'skipped', 'unhandled', 'failed'] as const;
      const outcome = options.outcome as (typeof outcomes)[number] | undefined;
      if (outcome !== undefined && !outcomes.includes(outcome)) throw new InvalidArgumentError(`--outcome must be one of ${outcomes.join(', ')}.`);
      const events = await (await deps()).services.webhooks.listEvents({ type: options.type, outcome, limit: options.limit });
      printRows(
        events.map((event) => ({
          id: event.id,
          type: event.type,
          received_at: iso(event.receivedAt),
          outcome: event.outcome,
          attempts: event.attempts,
          error: event.error ? event.error.slice(0, 120) : null,
          payload: event.hasPayload,
        })),
      );
    });
  webhooks
    .command('replay')
    .description('process an event again from its stored payload, as a live delivery (re-syncs the mirrored object)')
    .argument('<event-id>', 'event id (evt_...)')
    .action(async (id: string) => {
      const result = await (await deps()).services.webhooks.replay(id);
      printResult(result, `event ${result.id} (${result.type}) replayed: ${result.outcome} (was ${result.previous})`);
    });

  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help exits 0 (help shown for a missing subcommand exits 1); commander printed its message.
      if (error.exitCode === 0) return 0;
      if (error instanceof InvalidArgumentError || error.code === 'commander.invalidArgument') {
        if (!error.message.startsWith('error:')) io.stderr.write(`error: ${error.message}\n`);
      }
      return 1;
    }
    if (error instanceof AppError) {
      const fields = error.errors ? Object.entries(error.errors).map(([field, messages]) => ` (${field}: ${messages.join(' ')})`).join('') : '';
      io.stderr.write(`error: ${error.detail}${fields} [${error.code}]\n`);
      return 1;
    }
    // Not a user's mistake (the database is unreachable, a bug): the message, and the cause for the log.
    io.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await source.close();
  }
}

/** The dependencies of the service as configured by the environment (DATABASE_URL or DATA_DIR). */
export function depsFromEnvironment(): DepsSource {
  let opened: Promise<Deps> | undefined;
  return {
    open() {
      opened ??= (async () => {
        const config = resolveSecretKey(loadConfig());
        // Log lines (warnings only) go to stderr: stdout carries the command's output.
        const log = createLogger(process.env.ADMIN_LOG_LEVEL ?? 'warn', process.stderr);
        return createDeps(config, log);
      })();
      return opened;
    },
    async close() {
      if (opened) await (await opened.catch(() => undefined))?.close();
    },
  };
}

const isMain = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();

if (isMain) {
  process.exitCode = await runAdmin(process.argv.slice(2), depsFromEnvironment(), { stdout: process.stdout, stderr: process.stderr });
}
