import { readFileSync, statSync } from 'node:fs';
import { desc, sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../test/support/app.js';
import { truncateAll } from '../../test/support/db.js';
import { newUser, TEST_PASSWORD } from '../../test/support/factories.js';
import { captureLog } from '../../test/support/log.js';
import { deliver, providerEvent, subscriptionObject, TEST_WEBHOOK_SECRET } from '../../test/support/webhook.js';
import { mailOutbox } from './mail/mail.table.js';
import type { Mailer } from './mail/port.js';
import { loggedUrl, scrubSecrets, serializeError } from './logger.js';
import { randomToken } from './secrets.js';

/*
 * Every kind of secret through every path that logs, with the app's real logger captured in
 * memory: the log must hold none of them. Passwords, argon2 hashes, session tokens, API keys
 * (wsai_...), reset tokens, the Authorization, Cookie and Payment-Signature headers, URL
 * signatures, SQL parameters and the values PostgreSQL quotes back in its messages.
 */

const PASSWORD = 'Sup3r-Secret-Passw0rd!';
const API_KEY = `wsai_${randomToken(32)}`;
const SESSION = randomToken(32);
const COOKIE = `session=${randomToken(16)}`;
const SIGNATURE = `t=${Math.floor(Date.now() / 1000)},v1=${'ab'.repeat(32)}`;
const URL_SIG = randomToken(24);

/** A mailer whose transport fails with an error carrying secrets in every field a client library might fill. */
const failingMailer: Mailer & { armed: boolean } = {
  kind: 'smtp',
  armed: false,
  async send(message) {
    if (!this.armed) return;
    const cause = Object.assign(new Error(`duplicate key value violates unique constraint "users_email_unique"`), {
      code: '23505',
      severity: 'ERROR',
      routine: '_bt_check_unique',
      constraint: 'users_email_unique',
      detail: `Key (email)=(${message.to}) already exists.`,
      where: `SQL statement with ${PASSWORD}`,
    });
    throw Object.assign(new Error(`relay refused Bearer ${SESSION} for key ${API_KEY} (to ${message.to})`), {
      headers: { authorization: `Bearer ${SESSION}` },
      params: [PASSWORD],
      password: PASSWORD,
      cause,
    });
  },
  async close() {},
};

const logs = captureLog('debug');
let t: TestApp;
let failing: TestApp;
beforeAll(async () => {
  t = await createTestApp({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, LOG_LEVEL: 'debug' }, {}, { log: logs.log });
  failing = await createTestApp({ LOG_LEVEL: 'debug' }, { mailer: failingMailer }, { log: logs.log });
});
beforeEach(async () => {
  await truncateAll(t.database);
});
afterAll(async () => {
  await t.close();
  await failing.close();
});

/** The whole captured log as written (the raw lines, before any parsing). */
const logText = () => JSON.stringify(logs.lines());

function expectNoSecrets(...extra: string[]) {
  const text = logText();
  for (const secret of [PASSWORD, API_KEY, SESSION, COOKIE, SIGNATURE, URL_SIG, '$argon2', 'argon2id', ...extra]) {
    expect(text, `the log holds ${secret.slice(0, 20)}…`).not.toContain(secret);
  }
  expect(text).not.toMatch(/params: (?!\[redacted\])/);
}

/** Makes every insert into `table` fail the way PostgreSQL does, echoing the row's values in message and detail. */
async function failInserts(app: TestApp, table: string, column: string) {
  const db = app.deps.database.db;
  await db.execute(
    sql.raw(`
      CREATE OR REPLACE FUNCTION test_fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION USING
          MESSAGE = format('invalid input syntax for type integer: "%s"', NEW.${column}),
          DETAIL = format('Key (${column})=(%s) already exists.', NEW.${column}),
          ERRCODE = '22P02';
      END $$`),
  );
  await db.execute(sql.raw(`CREATE TRIGGER test_fail_insert BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION test_fail_insert()`));
  return async () => {
    await db.execute(sql.raw(`DROP TRIGGER IF EXISTS test_fail_insert ON ${table}`));
    await db.execute(sql.raw('DROP FUNCTION IF EXISTS test_fail_insert()'));
  };
}

describe('secrets never reach the log', () => {
  it('registration and a failed login', async () => {
    const ok = await t.post('/auth/users/', { email: 'ada@example.com', password: PASSWORD, name: 'Ada' });
    expect(ok.statusCode).toBe(201);
    const wrong = await t.post('/auth/token/login/', { email: 'ada@example.com', password: `${PASSWORD}x` });
    expect(wrong.statusCode).toBe(400);
    const right = await t.post('/auth/token/login/', { email: 'ada@example.com', password: PASSWORD });
    const token = right.json().auth_token as string;
    expectNoSecrets(token);
  });

  it('a registration the database refuses: 500, logged without the hash, the parameters or the echoed values', async () => {
    const restore = await failInserts(t, 'users', 'email');
    try {
      const email = `grace-${randomToken(6).toLowerCase()}@example.com`;
      const res = await t.post('/auth/users/', { email, password: PASSWORD, name: 'Grace' });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ detail: 'Internal server error.', code: 'server_error' });
      const line = logs.lines().findLast((l) => l.msg === 'unhandled error')!;
      expect(line).toBeDefined();
      // What is kept: the SQL text (no values), the SQLSTATE and the message without the value.
      expect(JSON.stringify(line)).toContain('insert into \\"users\\"');
      expect(JSON.stringify(line)).toContain('22P02');
      expect(JSON.stringify(line)).toContain('invalid input syntax for type integer: \\"[redacted]\\"');
      expectNoSecrets(email, 'Key (email)');
    } finally {
      await restore();
    }
  });

  it('request logging: Authorization, Cookie, API key and URL signatures', async () => {
    const user = await newUser(t);
    await t.request('GET', '/api/users/me/', {
      headers: { authorization: `Bearer ${SESSION}`, cookie: COOKIE, 'x-api-key': API_KEY, 'payment-signature': SIGNATURE },
    });
    await t.request('GET', `/api/workspaces/?sig=${URL_SIG}&limit=5`, { as: user });
    await t.request('GET', `/healthz?token=${URL_SIG}`, { headers: { authorization: `Token ${SESSION}` } });
    await t.request('GET', '/api/users/me/', { headers: { authorization: `Bearer ${API_KEY}` } });
    // The request lines are there, with the harmless parts of the URL.
    expect(logText()).toContain('limit=5');
    expect(logText()).toContain('sig=[redacted]');
    expectNoSecrets(user.token);
  });

  it('the payment webhook with a bad signature', async () => {
    const event = providerEvent('customer.subscription.created', subscriptionObject());
    const res = await deliver(t, event, { header: SIGNATURE });
    expect(res.statusCode).toBe(400);
    expectNoSecrets(TEST_WEBHOOK_SECRET);
  });

  it('a password reset: the mailed token is in the outbox table and a private file, not in the log', async () => {
    const user = await newUser(t);
    expect((await t.post('/auth/users/reset_password/', { email: user.email })).statusCode).toBe(204);
    const [mail] = await t.deps.database.db.select().from(mailOutbox).orderBy(desc(mailOutbox.createdAt)).limit(1);
    const token = /token=([\w-]+)/.exec(mail!.text)![1]!;
    // The operator reads it from DATA_DIR/mail (a private file), named on the log line.
    const line = logs.lines().findLast((l) => l.msg === 'mail written to the outbox (its text is not logged)')!;
    expect(line.file).toMatch(new RegExp(`^${t.config.DATA_DIR}/mail/`));
    expect(readFileSync(line.file as string, 'utf8')).toContain(token);
    expect(statSync(line.file as string).mode & 0o777).toBe(0o600);
    expectNoSecrets(token, mail!.text.slice(0, 40));
  });

  it('an unhandled error whose message, fields and cause hold secrets', async () => {
    const user = await newUser(failing);
    failingMailer.armed = true;
    try {
      const res = await failing.post('/auth/users/reset_password/', { email: user.email });
      expect(res.statusCode).toBe(500);
    } finally {
      failingMailer.armed = false;
    }
    const line = logs.lines().findLast((l) => l.msg === 'unhandled error');
    const text = JSON.stringify(line);
    expect(text).toContain('relay refused Bearer [redacted] for key [redacted]');
    expect(text).toContain('23505');
    expect(text).toContain('users_email_unique');
    expectNoSecrets(`Key (email)=(${user.email})`, 'reset_password_confirm');
  });

  it('a user password is never on a log line even when code logs a body or headers itself', () => {
    logs.log.info({ body: { email: 'a@example.com', password: PASSWORD, token: SESSION, invitation_token: API_KEY } }, 'body');
    logs.log.info({ req: { headers: { authorization: `Bearer ${SESSION}` }, url: `/x?sig=${URL_SIG}` } }, 'request');
    logs.log.info({ headers: { cookie: COOKIE, 'payment-signature': SIGNATURE } }, 'headers');
    logs.log.warn(`a message that quotes ${API_KEY} and Bearer ${SESSION}`);
    expect(logText()).toContain('a@example.com');
    expectNoSecrets();
  });
});

describe('the pieces', () => {
  it('a real PostgreSQL error keeps its message without the value, and its code', async () => {
    const error = await t.deps.database.db.execute(sql`SELECT ${PASSWORD}::int AS n`).then(
      () => undefined,
      (e: unknown) => e,
    );
    const out = JSON.stringify(serializeError(error));
    expect(out).toContain('22P02');
    expect(out).toContain('invalid input syntax for type integer: \\"[redacted]\\"');
    expect(out).not.toContain(PASSWORD);
  });

  it('loggedUrl redacts credential-like query values and bounds the length', () => {
    expect(loggedUrl('/files/upload/a/b?ct=text%2Fplain&exp=1&sig=abc')).toBe('/files/upload/a/b?ct=text%2Fplain&exp=1&sig=[redacted]');
    expect(loggedUrl(`/x/${'a'.repeat(5000)}`)).toHaveLength(512 + '…[4515 more]'.length);
  });

  it('scrubSecrets catches keys, hashes and credentials by their form', () => {
    expect(scrubSecrets(`k=${API_KEY} h=$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA Bearer ${SESSION}`)).toBe(
      'k=[redacted] h=[redacted] Bearer [redacted]',
    );
    expect(TEST_PASSWORD).toBeTruthy();
  });
});
