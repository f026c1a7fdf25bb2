import { desc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { mailOutbox } from '../../platform/mail/mail.table.js';
import { forgetCachedAccess, useTestApp } from '../../../test/support/app.js';
import { newUser, TEST_PASSWORD } from '../../../test/support/factories.js';
import { authTokens } from '../users/users.table.js';

// Many logins from one client IP: the throttle has its own tests (auth.throttle.test.ts).
const t = useTestApp({ THROTTLE_LOGIN: '1000/minute' });

async function login(email: string, password: string) {
  return t.post('/auth/token/login/', { email, password });
}

describe('registration', () => {
  it('registers a user and returns id, email and name only', async () => {
    const res = await t.post('/auth/users/', { email: 'Ada@Example.com', password: 'analytical-engine', name: 'Ada' });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ id: expect.any(Number), email: 'ada@example.com', name: 'Ada' });
  });

  it('refuses a second account with the same email in any case', async () => {
    await t.post('/auth/users/', { email: 'ada@example.com', password: 'analytical-engine' });
    const res = await t.post('/auth/users/', { email: 'ADA@example.com', password: 'analytical-engine' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'email_taken', errors: { email: [expect.any(String)] } });
  });

  it.each([
    ['short password', { email: 'a@example.com', password: 'short' }, 'password'],
    ['numeric password', { email: 'a@example.com', password: '1234567890' }, 'password'],
    ['bad email', { email: 'not-an-email', password: 'long-enough-pw' }, 'email'],
    ['missing password', { email: 'a@example.com' }, 'password'],
  ])('rejects %s with a field error', async (_label, body, field) => {
    const res = await t.post('/auth/users/', body);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_error');
    expect(res.json().errors[field]).toBeDefined();
  });

  it('rejects malformed JSON with 400 parse_error', async () => {
    const res = await t.request('POST', '/auth/users/', {
      body: '{"email":',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'parse_error' });
  });
});

describe('registration when sign-up is disabled', () => {
  const closed = useTestApp({ ALLOW_SIGNUP: 'false' });
  it('answers 403 signup_disabled', async () => {
    const res = await closed.post('/auth/users/', { email: 'x@example.com', password: 'long-enough-pw' });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('signup_disabled');
  });
});

describe('token login and logout', () => {
  it('logs in with the right password and the token authenticates', async () => {
    const user = await newUser(t);
    const res = await login(user.email.toUpperCase(), TEST_PASSWORD);
    expect(res.statusCode).toBe(200);
    const token = res.json().auth_token as string;
    expect(token.length).toBeGreaterThan(30);
    const me = await t.get('/auth/users/me/', { token });
    expect(me.json()).toEqual({ id: user.id, email: user.email, name: user.name, email_verified: true });
    // Only the hash is stored.
    const rows = await t.deps.database.db.select().from(authTokens).where(eq(authTokens.userId, user.id));
    expect(rows.map((r) => r.tokenHash)).not.toContain(token);
  });

  it('accepts the DRF "Token" scheme as well as Bearer', async () => {
    const user = await newUser(t);
    const res = await t.request('GET', '/auth/users/me/', { headers: { authorization: `Token ${user.token}` } });
    expect(res.statusCode).toBe(200);
  });

  it('refuses a wrong password and an unknown email the same way', async () => {
    const user = await newUser(t);
    const wrong = await login(user.email, 'wrong-password');
    const unknown = await login('nobody@example.com', TEST_PASSWORD);
    expect(wrong.statusCode).toBe(400);
    expect(unknown.statusCode).toBe(400);
    expect(wrong.json()).toEqual(unknown.json());
    expect(wrong.json().code).toBe('invalid_credentials');
  });

  it('logout revokes the token used', async () => {
    const user = await newUser(t);
    expect((await t.post('/auth/token/logout/', {}, user)).statusCode).toBe(204);
    const res = await t.get('/auth/users/me/', user);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('authentication_failed');
  });

  it('refuses anonymous, malformed and expired credentials with 403', async () => {
    expect((await t.get('/auth/users/me/')).json()).toMatchObject({ code: 'not_authenticated' });
    const malformed = await t.request('GET', '/auth/users/me/', { headers: { authorization: 'Basic abc' } });
    expect(malformed.statusCode).toBe(403);
    const user = await newUser(t);
    await t.deps.database.db.update(authTokens).set({ expiresAt: new Date(Date.now() - 1000) });
    forgetCachedAccess(t);
    expect((await t.get('/auth/users/me/', user)).statusCode).toBe(403);
  });
});

describe('me', () => {
  it('updates the name (PATCH and PUT, both partial)', async () => {
    const user = await newUser(t);
    const res = await t.patch('/auth/users/me/', { name: 'New Name' }, user);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: user.id, email: user.email, name: 'New Name', email_verified: true });
    const put = await t.put('/auth/users/me/', { name: 'Other Name' }, user);
    expect(put.json()).toEqual({ id: user.id, email: user.email, name: 'Other Name', email_verified: true });
  });

  it('deletes the account only with the current password', async () => {
    const user = await newUser(t);
    const wrong = await t.delete('/auth/users/me/', user, { current_password: 'nope-nope-nope' });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().code).toBe('invalid_password');
    const ok = await t.delete('/auth/users/me/', user, { current_password: TEST_PASSWORD });
    expect(ok.statusCode).toBe(204);
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(400);
  });
});

describe('set_password', () => {
  it('changes the password and revokes every other token but the current one', async () => {
    const user = await newUser(t);
    const other = (await login(user.email, TEST_PASSWORD)).json().auth_token as string;
    const res = await t.post(
      '/auth/users/set_password/',
      { current_password: TEST_PASSWORD, new_password: 'a-brand-new-secret' },
      user,
    );
    expect(res.statusCode).toBe(204);
    expect((await t.get('/auth/users/me/', user)).statusCode).toBe(200);
    expect((await t.get('/auth/users/me/', { token: other })).statusCode).toBe(403);
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(400);
    expect((await login(user.email, 'a-brand-new-secret')).statusCode).toBe(200);
  });

  it('refuses a wrong current password and changes nothing', async () => {
    const user = await newUser(t);
    const res = await t.post(
      '/auth/users/set_password/',
      { current_password: 'wrong-password', new_password: 'a-brand-new-secret' },
      user,
    );
    expect(res.statusCode).toBe(400);
    expect((await login(user.email, TEST_PASSWORD)).statusCode).toBe(200);
  });
});

describe('password reset', () => {
  async function lastMailTo(email: string) {
    const [mail] = await t.deps.database.db
      .select()
      .from(mailOutbox)
      .where(eq(mailOutbox.to, email))
      .orderBy(desc(mailOutbox.createdAt));
    return mail;
  }

  it('mails a single-use secret that sets a new password and ends every session', async () => {
    const user = await newUser(t);
    expect((await t.post('/auth/users/reset_password/', { email: user.email })).statusCode).toBe(204);
    const mail = await lastMailTo(user.email);
    const token = /token=(\S+)/.exec(mail!.text)![1]!;
    const body = { uid: String(user.id), token, new_password: 'reset-and-renewed' };
    expect((await t.post('/auth/users/reset_password_confirm/', body)).statusCode).toBe(204);
    expect((await t.get('/auth/users/me/', user)).statusCode).toBe(403);
    expect((await login(user.email, 'reset-and-renewed')).statusCode).toBe(200);
    const again = await t.post('/auth/users/reset_password_confirm/', { ...body, new_password: 'another-one-again' });
    expect(again.statusCode).toBe(400);
    expect(again.json().code).toBe('invalid_token');
  });

  it('answers 204 for an unknown email and sends nothing', async () => {
    expect((await t.post('/auth/users/reset_password/', { email: 'ghost@example.com' })).statusCode).toBe(204);
    expect(await lastMailTo('ghost@example.com')).toBeUndefined();
  });

  it('refuses a secret presented with another uid', async () => {
    const user = await newUser(t);
    const other = await newUser(t);
    await t.post('/auth/users/reset_password/', { email: user.email });
    const token = /token=(\S+)/.exec((await lastMailTo(user.email))!.text)![1]!;
    const res = await t.post('/auth/users/reset_password_confirm/', {
      uid: String(other.id),
      token,
      new_password: 'reset-and-renewed',
    });
    expect(res.statusCode).toBe(400);
  });
});
