import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { newUser, TEST_PASSWORD, type TestUser } from '../../../test/support/factories.js';
import { lastMailTo, mailsTo, tokenIn } from '../../../test/support/mail.js';
import { mailOutbox } from '../../platform/mail/mail.table.js';
import { sha256Hex } from '../../platform/secrets.js';
import { emailTokens, users } from '../users/users.table.js';

// Many logins from one client IP: the throttle has its own tests (auth.throttle.test.ts).
const t = useTestApp({ THROTTLE_LOGIN: '1000/minute' });
const db = () => t.deps.database.db;

const userRow = async (id: number) => (await db().select().from(users).where(eq(users.id, id)))[0]!;
const allMails = () => db().select().from(mailOutbox);
const tokenRows = (userId: number) => db().select().from(emailTokens).where(eq(emailTokens.userId, userId));
const login = (email: string, password = TEST_PASSWORD) => t.post('/auth/token/login/', { email, password });
const setEmail = (user: TestUser, new_email: string, current_password = TEST_PASSWORD) =>
  t.post('/auth/users/set_email/', { current_password, new_email }, user);
const confirm = (uid: number | string, token: string) => t.post('/auth/users/set_email/confirm/', { uid, token });

describe('PATCH and PUT /auth/users/me/ do not change the email', () => {
  it.each(['PATCH', 'PUT'] as const)(
    '%s with another address is 400 email_change_requires_confirmation and changes nothing',
    async (method) => {
      const user = await newUser(t, { name: 'Before' });
      const before = await userRow(user.id);
      const res = await t.request(method, '/auth/users/me/', {
        as: user,
        body: { name: 'After', email: 'victim@example.com' },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        detail: expect.stringContaining('set_email'),
        code: 'email_change_requires_confirmation',
        errors: { email: [expect.any(String)] },
      });
      expect(await userRow(user.id)).toEqual(before);
      expect(await allMails()).toEqual([]);
    },
  );

  it('accepts the current address (any case) alongside a name change', async () => {
    const user = await newUser(t);
    const res = await t.put('/auth/users/me/', { email: user.email.toUpperCase(), name: 'Renamed' }, user);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: user.id, email: user.email, name: 'Renamed', email_verified: true });
  });
});

describe('POST /auth/users/set_email/', () => {
  it('mails a confirmation link to the new address and a notice to the old one; nothing changes yet', async () => {
    const user = await newUser(t);
    const before = await userRow(user.id);
    const res = await setEmail(user, 'New.Address@Example.com');
    expect(res.statusCode).toBe(204);

    const mail = await lastMailTo(t, 'new.address@example.com');
    expect(mail.subject).toBe('Confirm your new email address');
    const token = tokenIn(mail);
    expect(mail.text).toContain(`http://localhost:8000/email/confirm/${user.id}/${token}`);
    expect(mail.text).toContain(`uid=${user.id} and token=${token}`);
    expect(mail.text).toContain('POST /auth/users/set_email/confirm/');
    expect(mail.text).not.toContain(user.email);
    const notice = await lastMailTo(t, user.email);
    expect(notice.subject).toBe('Your email address is about to change');
    expect(notice.text).toContain('new.address@example.com');
    expect(notice.text).not.toContain(token);

    expect(await tokenRows(user.id)).toEqual([
      expect.objectContaining({ purpose: 'email_change', newEmail: 'new.address@example.com', tokenHash: sha256Hex(token) }),
    ]);
    // Until confirmed the old address stands: same row, login with the old address only.
    expect(await userRow(user.id)).toEqual(before);
    expect((await login('new.address@example.com')).statusCode).toBe(400);
    expect((await login(user.email)).statusCode).toBe(200);
    expect((await t.get('/auth/users/me/', user)).json()).toMatchObject({ email: user.email });
  });

  it('refuses a wrong current password with 400 invalid_password, storing and mailing nothing', async () => {
    const user = await newUser(t);
    const res = await setEmail(user, 'new@example.com', 'wrong-password');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_password', errors: { current_password: [expect.any(String)] } });
    expect(await tokenRows(user.id)).toEqual([]);
    expect(await allMails()).toEqual([]);
  });

  it('refuses an address another account has (any case) with 400 email_taken, and the current one with 400 email_unchanged', async () => {
    const user = await newUser(t);
    const other = await newUser(t);
    const taken = await setEmail(user, other.email.toUpperCase());
    expect(taken.statusCode).toBe(400);
    expect(taken.json()).toMatchObject({ code: 'email_taken', errors: { new_email: [expect.any(String)] } });
    const same = await setEmail(user, user.email);
    expect(same.statusCode).toBe(400);
    expect(same.json()).toMatchObject({ code: 'email_unchanged', errors: { new_email: [expect.any(String)] } });
    expect(await tokenRows(user.id)).toEqual([]);
    expect(await allMails()).toEqual([]);
  });

  it('needs a signed-in caller and a valid address', async () => {
    expect((await t.post('/auth/users/set_email/', { current_password: TEST_PASSWORD, new_email: 'a@example.com' })).statusCode).toBe(403);
    const user = await newUser(t);
    const bad = await setEmail(user, 'not-an-address');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.new_email).toBeDefined();
  });
});

describe('POST /auth/users/set_email/confirm/', () => {
  it('makes the change, verifies the new address, and works once', async () => {
    const user = await newUser(t, { verified: false });
    await setEmail(user, 'new@example.com');
    const token = tokenIn(await lastMailTo(t, 'new@example.com'));
    const res = await confirm(String(user.id), token);
    expect(res.statusCode).toBe(204);
    const row = await userRow(user.id);
    expect(row).toMatchObject({ email: 'new@example.com', emailVerifiedAt: expect.any(Date) });
    expect((await t.get('/auth/users/me/', user)).json()).toEqual({
      id: user.id,
      email: 'new@example.com',
      name: user.name,
      email_verified: true,
    });
    expect((await login('new@example.com')).statusCode).toBe(200);
    expect((await login(user.email)).statusCode).toBe(400);

    const again = await confirm(user.id, token);
    expect(again.statusCode).toBe(400);
    expect(again.json().code).toBe('invalid_token');
  });

  it('refuses a wrong token, another uid and an expired token with 400 invalid_token, changing nothing', async () => {
    const user = await newUser(t);
    const other = await newUser(t);
    await setEmail(user, 'new@example.com');
    const token = tokenIn(await lastMailTo(t, 'new@example.com'));
    for (const [uid, secret] of [
      [user.id, 'not-the-token'],
      [other.id, token],
    ] as const) {
      const res = await confirm(uid, secret);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('invalid_token');
    }
    await db().update(emailTokens).set({ expiresAt: new Date(Date.now() - 1000) });
    expect((await confirm(user.id, token)).json().code).toBe('invalid_token');
    expect((await userRow(user.id)).email).toBe(user.email);
    expect((await userRow(other.id)).email).toBe(other.email);
  });

  it('does not accept an activation secret, nor an email-change secret as activation', async () => {
    const user = await newUser(t, { verified: false });
    await t.post('/auth/users/resend_activation/', { email: user.email });
    const activation = tokenIn(await lastMailTo(t, user.email));
    expect((await confirm(user.id, activation)).json().code).toBe('invalid_token');
    await setEmail(user, 'new@example.com');
    const change = tokenIn(await lastMailTo(t, 'new@example.com'));
    expect((await t.post('/auth/users/activation/', { uid: user.id, token: change })).statusCode).toBe(400);
    expect(await userRow(user.id)).toMatchObject({ email: user.email, emailVerifiedAt: null });
  });

  it('refuses with 400 email_taken when the address was taken in the meantime, and keeps the old one', async () => {
    const user = await newUser(t);
    await setEmail(user, 'contested@example.com');
    const token = tokenIn(await lastMailTo(t, 'contested@example.com'));
    await newUser(t, { email: 'Contested@example.com' });
    const res = await confirm(user.id, token);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('email_taken');
    expect((await userRow(user.id)).email).toBe(user.email);
  });

  it('uses only the newest request: an earlier link stops working', async () => {
    const user = await newUser(t);
    await setEmail(user, 'first@example.com');
    const first = tokenIn(await lastMailTo(t, 'first@example.com'));
    await setEmail(user, 'second@example.com');
    const second = tokenIn(await lastMailTo(t, 'second@example.com'));
    expect((await confirm(user.id, first)).json().code).toBe('invalid_token');
    expect((await confirm(user.id, second)).statusCode).toBe(204);
    expect((await userRow(user.id)).email).toBe('second@example.com');
  });

  it('ends the secrets mailed to the old address (activation and password reset)', async () => {
    const user = await newUser(t, { verified: false });
    await t.post('/auth/users/resend_activation/', { email: user.email });
    const activation = tokenIn(await lastMailTo(t, user.email));
    await t.post('/auth/users/reset_password/', { email: user.email });
    const reset = tokenIn(await lastMailTo(t, user.email));
    await setEmail(user, 'new@example.com');
    expect((await confirm(user.id, tokenIn(await lastMailTo(t, 'new@example.com')))).statusCode).toBe(204);

    expect((await t.post('/auth/users/activation/', { uid: user.id, token: activation })).statusCode).toBe(400);
    const resetRes = await t.post('/auth/users/reset_password_confirm/', {
      uid: user.id,
      token: reset,
      new_password: 'taken-over-password',
    });
    expect(resetRes.statusCode).toBe(400);
    expect((await login('new@example.com')).statusCode).toBe(200);
    // The old address got the activation, the reset and the change notice; nothing after the change.
    expect((await mailsTo(t, user.email)).map((m) => m.subject)).toEqual([
      'Confirm your email address',
      'Reset your password',
      'Your email address is about to change',
    ]);
  });
});
