import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp, type TestApp } from '../../../test/support/app.js';
import { newUser, TEST_PASSWORD } from '../../../test/support/factories.js';
import { lastMailTo, mailsTo, tokenIn } from '../../../test/support/mail.js';
import { sha256Hex } from '../../platform/secrets.js';
import { emailTokens, users } from '../users/users.table.js';

// Many logins from one client IP: the throttle has its own tests (auth.throttle.test.ts).
const t = useTestApp({ THROTTLE_LOGIN: '1000/minute' });

async function register(app: TestApp, email: string) {
  const res = await app.post('/auth/users/', { email, password: 'analytical-engine', name: 'Ada' });
  expect(res.statusCode).toBe(201);
  return res.json() as { id: number; email: string };
}

const verifiedAt = async (app: TestApp, id: number) =>
  (await app.deps.database.db.select().from(users).where(eq(users.id, id)))[0]!.emailVerifiedAt;
const activate = (app: TestApp, uid: number | string, token: string) =>
  app.post('/auth/users/activation/', { uid, token });
const login = (app: TestApp, email: string, password = 'analytical-engine') =>
  app.post('/auth/token/login/', { email, password });

describe('registration and activation', () => {
  it('registers an unverified account and mails an activation link with uid and token', async () => {
    const user = await register(t, 'ada@example.com');
    expect(await verifiedAt(t, user.id)).toBeNull();
    const mail = await lastMailTo(t, 'ada@example.com');
    expect(mail.subject).toBe('Confirm your email address');
    const token = tokenIn(mail);
    expect(mail.text).toContain(`http://localhost:8000/activate/${user.id}/${token}`);
    expect(mail.text).toContain(`uid=${user.id} and token=${token}`);
    expect(mail.text).toContain('POST /auth/users/activation/');
    // Only the SHA-256 of the secret is stored.
    const rows = await t.deps.database.db.select().from(emailTokens).where(eq(emailTokens.userId, user.id));
    expect(rows).toEqual([expect.objectContaining({ purpose: 'activation', tokenHash: sha256Hex(token), usedAt: null })]);
    expect(JSON.stringify(rows)).not.toContain(token);
    // Valid for EMAIL_TOKEN_TTL_SECONDS (3 days by default).
    const ttl = rows[0]!.expiresAt.getTime() - Date.now();
    expect(ttl).toBeGreaterThan(3 * 86400_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(3 * 86400_000);

    const login1 = await login(t, 'ada@example.com');
    const me = await t.get('/auth/users/me/', { token: login1.json().auth_token });
    expect(me.json()).toEqual({ id: user.id, email: 'ada@example.com', name: 'Ada', email_verified: false });
  });

  it('verifies the address with the mailed uid and token (204), once', async () => {
    const user = await register(t, 'ada@example.com');
    const token = tokenIn(await lastMailTo(t, 'ada@example.com'));
    const res = await activate(t, String(user.id), token);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await verifiedAt(t, user.id)).toBeInstanceOf(Date);
    const session = (await login(t, 'ada@example.com')).json().auth_token as string;
    expect((await t.get('/auth/users/me/', { token: session })).json().email_verified).toBe(true);
    expect((await t.get('/api/users/me/', { token: session })).json().email_verified).toBe(true);

    const again = await activate(t, user.id, token);
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({ detail: expect.any(String), code: 'invalid_token', errors: { token: [expect.any(String)] } });
  });

  it('refuses a wrong token, another uid and an expired token with 400 invalid_token, verifying nothing', async () => {
    const user = await register(t, 'ada@example.com');
    const other = await register(t, 'grace@example.com');
    const token = tokenIn(await lastMailTo(t, 'ada@example.com'));
    for (const [uid, secret] of [
      [user.id, 'not-the-token'],
      [other.id, token],
      ['abc', token],
    ] as const) {
      const res = await activate(t, uid, secret);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('invalid_token');
    }
    await t.deps.database.db.update(emailTokens).set({ expiresAt: new Date(Date.now() - 1000) });
    const expired = await activate(t, user.id, token);
    expect(expired.statusCode).toBe(400);
    expect(expired.json().code).toBe('invalid_token');
    expect(await verifiedAt(t, user.id)).toBeNull();
    expect(await verifiedAt(t, other.id)).toBeNull();
  });

  it('rejects a malformed body with 400 validation_error', async () => {
    const res = await t.post('/auth/users/activation/', { uid: 1 });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.token).toBeDefined();
  });
});

describe('POST /auth/users/resend_activation/', () => {
  it('mails a new link to an unverified account; the new link supersedes the old one', async () => {
    const user = await register(t, 'ada@example.com');
    const first = tokenIn(await lastMailTo(t, 'ada@example.com'));
    const res = await t.post('/auth/users/resend_activation/', { email: 'ADA@example.com' });
    expect(res.statusCode).toBe(204);
    const mails = await mailsTo(t, 'ada@example.com');
    expect(mails).toHaveLength(2);
    const second = tokenIn(mails[1]!);
    expect(second).not.toBe(first);
    expect((await activate(t, user.id, first)).statusCode).toBe(400);
    expect(await verifiedAt(t, user.id)).toBeNull();
    expect((await activate(t, user.id, second)).statusCode).toBe(204);
    expect(await verifiedAt(t, user.id)).toBeInstanceOf(Date);
  });

  it('always answers 204 and mails nothing for unknown or already verified addresses', async () => {
    const verified = await newUser(t);
    for (const email of ['ghost@example.com', verified.email, 'not even an address']) {
      const res = await t.post('/auth/users/resend_activation/', { email });
      expect(res.statusCode).toBe(204);
      expect(await mailsTo(t, email)).toEqual([]);
    }
  });
});

describe('a password reset proves the address', () => {
  it('marks the account verified when the mailed reset secret is used', async () => {
    const user = await newUser(t, { verified: false });
    expect((await t.post('/auth/users/reset_password/', { email: user.email })).statusCode).toBe(204);
    const token = tokenIn(await lastMailTo(t, user.email));
    const body = { uid: String(user.id), token, new_password: 'reset-and-renewed' };
    expect((await t.post('/auth/users/reset_password_confirm/', body)).statusCode).toBe(204);
    expect(await verifiedAt(t, user.id)).toBeInstanceOf(Date);
  });
});

describe('GET /auth/users/me/ and /api/users/me/', () => {
  it('show email_verified', async () => {
    const unverified = await newUser(t, { verified: false });
    const verified = await newUser(t);
    expect((await t.get('/auth/users/me/', unverified)).json().email_verified).toBe(false);
    expect((await t.get('/api/users/me/', unverified)).json().email_verified).toBe(false);
    expect((await t.get('/auth/users/me/', verified)).json().email_verified).toBe(true);
    expect((await t.get('/api/users/me/', verified)).json().email_verified).toBe(true);
  });
});

describe('with REQUIRE_EMAIL_VERIFICATION=true', () => {
  const strict = useTestApp({ REQUIRE_EMAIL_VERIFICATION: 'true', THROTTLE_LOGIN: '1000/minute' });

  it('refuses login with 403 email_not_verified until the address is verified, then allows it', async () => {
    const user = await register(strict, 'ada@example.com');
    const refused = await login(strict, 'ada@example.com');
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ detail: expect.stringContaining('resend_activation'), code: 'email_not_verified' });
    // A wrong password still gets the usual answer: the 403 is only for someone who knows the password.
    const wrong = await login(strict, 'ada@example.com', 'wrong-password');
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().code).toBe('invalid_credentials');

    const token = tokenIn(await lastMailTo(strict, 'ada@example.com'));
    expect((await activate(strict, user.id, token)).statusCode).toBe(204);
    const ok = await login(strict, 'ada@example.com');
    expect(ok.statusCode).toBe(200);
    expect(ok.json().auth_token).toEqual(expect.any(String));
  });

  it('lets verified accounts log in as usual', async () => {
    const user = await newUser(strict);
    expect((await login(strict, user.email, TEST_PASSWORD)).statusCode).toBe(200);
  });
});
