import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { newUser, TEST_PASSWORD, type TestUser } from '../../../test/support/factories.js';
import { mailsTo } from '../../../test/support/mail.js';

/**
 * Login, reset_password/, resend_activation/ and set_email/ allow THROTTLE_LOGIN (10/minute by
 * default) attempts per address and per client IP. The counters live in the app's limiter for
 * the whole file, so every test uses its own addresses and client IPs.
 */
const t = useTestApp();

let ipCounter = 0;
/** A client IP no other test uses. */
const freshIp = () => `198.51.100.${++ipCounter}`;

function post(url: string, body: unknown, ip: string, as?: TestUser): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url,
    payload: body as Record<string, unknown>,
    remoteAddress: ip,
    headers: as ? { authorization: `Bearer ${as.token}` } : {},
  });
}

function expectThrottled(res: LightMyRequestResponse) {
  expect(res.statusCode).toBe(429);
  expect(res.json()).toEqual({ detail: expect.stringMatching(/throttled/), code: 'throttled' });
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe('login', () => {
  it('answers the 11th attempt for one address within a minute with 429 and Retry-After, even from other IPs', async () => {
    const user = await newUser(t);
    for (let i = 0; i < 10; i += 1) {
      const res = await post('/auth/token/login/', { email: user.email, password: `wrong-${i}` }, freshIp());
      expect(res.statusCode).toBe(400);
    }
    // The right password, in another case, from yet another IP: still refused, no token issued.
    const eleventh = await post('/auth/token/login/', { email: user.email.toUpperCase(), password: TEST_PASSWORD }, freshIp());
    expectThrottled(eleventh);
    // Other addresses are not affected.
    const other = await newUser(t);
    expect((await post('/auth/token/login/', { email: other.email, password: TEST_PASSWORD }, freshIp())).statusCode).toBe(200);
  });

  it('answers the 11th attempt from one IP with 429, whatever the address, and other IPs still log in', async () => {
    const ip = freshIp();
    for (let i = 0; i < 10; i += 1) {
      const res = await post('/auth/token/login/', { email: `nobody-${i}@example.com`, password: 'guess-guess' }, ip);
      expect(res.statusCode).toBe(400);
    }
    const user = await newUser(t);
    expectThrottled(await post('/auth/token/login/', { email: user.email, password: TEST_PASSWORD }, ip));
    expect((await post('/auth/token/login/', { email: user.email, password: TEST_PASSWORD }, freshIp())).statusCode).toBe(200);
  });
});

describe('reset_password/', () => {
  it('throttles per address: the 11th request is 429 and sends no mail', async () => {
    const user = await newUser(t);
    for (let i = 0; i < 10; i += 1) {
      expect((await post('/auth/users/reset_password/', { email: user.email }, freshIp())).statusCode).toBe(204);
    }
    expectThrottled(await post('/auth/users/reset_password/', { email: user.email }, freshIp()));
    expect(await mailsTo(t, user.email)).toHaveLength(10);
  });

  it('throttles per IP, also for unknown addresses', async () => {
    const ip = freshIp();
    for (let i = 0; i < 10; i += 1) {
      expect((await post('/auth/users/reset_password/', { email: `ghost-${i}@example.com` }, ip)).statusCode).toBe(204);
    }
    const user = await newUser(t);
    expectThrottled(await post('/auth/users/reset_password/', { email: user.email }, ip));
    expect(await mailsTo(t, user.email)).toEqual([]);
  });
});

describe('resend_activation/', () => {
  it('throttles per address and per IP', async () => {
    const user = await newUser(t, { verified: false });
    for (let i = 0; i < 10; i += 1) {
      expect((await post('/auth/users/resend_activation/', { email: user.email }, freshIp())).statusCode).toBe(204);
    }
    expectThrottled(await post('/auth/users/resend_activation/', { email: user.email }, freshIp()));
    expect(await mailsTo(t, user.email)).toHaveLength(10);

    const ip = freshIp();
    for (let i = 0; i < 10; i += 1) {
      await post('/auth/users/resend_activation/', { email: `ghost-${i}@example.com` }, ip);
    }
    expectThrottled(await post('/auth/users/resend_activation/', { email: 'someone-else@example.com' }, ip));
  });
});

describe('set_email/', () => {
  it('throttles password guesses per account: the 11th is 429 even with the right password, and nothing is mailed', async () => {
    const user = await newUser(t);
    for (let i = 0; i < 10; i += 1) {
      const res = await post('/auth/users/set_email/', { current_password: `wrong-${i}`, new_email: `n${i}@example.com` }, freshIp(), user);
      expect(res.statusCode).toBe(400);
    }
    const res = await post('/auth/users/set_email/', { current_password: TEST_PASSWORD, new_email: 'new@example.com' }, freshIp(), user);
    expectThrottled(res);
    expect(await mailsTo(t, 'new@example.com')).toEqual([]);
  });

  it('throttles per target address and per IP', async () => {
    const target = 'flooded@example.com';
    for (let i = 0; i < 10; i += 1) {
      const sender = await newUser(t);
      await post('/auth/users/set_email/', { current_password: TEST_PASSWORD, new_email: target }, freshIp(), sender);
    }
    const last = await newUser(t);
    expectThrottled(await post('/auth/users/set_email/', { current_password: TEST_PASSWORD, new_email: target }, freshIp(), last));
    expect(await mailsTo(t, target)).toHaveLength(10);

    const ip = freshIp();
    for (let i = 0; i < 10; i += 1) {
      const sender = await newUser(t);
      await post('/auth/users/set_email/', { current_password: 'wrong-password', new_email: `x${i}@example.com` }, ip, sender);
    }
    const user = await newUser(t);
    expectThrottled(await post('/auth/users/set_email/', { current_password: TEST_PASSWORD, new_email: 'y@example.com' }, ip, user));
  });
});

describe('THROTTLE_LOGIN', () => {
  const strict = useTestApp({ THROTTLE_LOGIN: '2/hour' });

  it('sets the rate', async () => {
    const user = await newUser(strict);
    const login = () =>
      strict.app.inject({
        method: 'POST',
        url: '/auth/token/login/',
        payload: { email: user.email, password: TEST_PASSWORD },
        remoteAddress: '203.0.113.7',
      });
    expect((await login()).statusCode).toBe(200);
    expect((await login()).statusCode).toBe(200);
    const third = await login();
    expect(third.statusCode).toBe(429);
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(3500);
  });
});

describe('the client IP behind proxies (TRUST_PROXY)', () => {
  const behindProxy = useTestApp({ TRUST_PROXY: '127.0.0.1' });

  const attempt = (app: typeof t, forwardedFor: string, peer = '127.0.0.1') =>
    app.app.inject({
      method: 'POST',
      url: '/auth/users/reset_password/',
      payload: { email: `nobody-${forwardedFor}@example.com` },
      remoteAddress: peer,
      headers: { 'x-forwarded-for': forwardedFor },
    });

  it('by default, a forged X-Forwarded-For does not escape the per-IP limit', async () => {
    for (let i = 0; i < 10; i += 1) expect((await attempt(t, `192.0.2.${i}`, '198.51.100.250')).statusCode).toBe(204);
    expectThrottled(await attempt(t, '192.0.2.99', '198.51.100.250'));
  });

  it('behind a named proxy, each forwarded client has its own counter; other peers cannot forge one', async () => {
    for (let i = 0; i < 10; i += 1) expect((await attempt(behindProxy, '203.0.113.50')).statusCode).toBe(204);
    expectThrottled(await attempt(behindProxy, '203.0.113.50'));
    expect((await attempt(behindProxy, '203.0.113.51')).statusCode).toBe(204);
    // A peer that is not the proxy: its header is ignored, its own address counts.
    for (let i = 0; i < 10; i += 1) expect((await attempt(behindProxy, `192.0.2.${i}`, '198.51.100.251')).statusCode).toBe(204);
    expectThrottled(await attempt(behindProxy, '192.0.2.200', '198.51.100.251'));
  });
});

describe('RateLimit headers with two throttles', () => {
  it('report the more restrictive of the IP and address counters', async () => {
    const ip = freshIp();
    const [first, second] = [await newUser(t), await newUser(t)];
    const remaining = (res: LightMyRequestResponse) => [res.headers['ratelimit-limit'], res.headers['ratelimit-remaining']];
    // One IP, two addresses: the IP's allowance (9, then 8 left) is the lower.
    expect(remaining(await post('/auth/token/login/', { email: first.email, password: 'wrong' }, ip))).toEqual(['10', '9']);
    expect(remaining(await post('/auth/token/login/', { email: second.email, password: 'wrong' }, ip))).toEqual(['10', '8']);
    // A fresh IP for an address already tried once: the address's (7 left after its third try) is the lower.
    await post('/auth/token/login/', { email: first.email, password: 'wrong' }, freshIp());
    const res = await post('/auth/token/login/', { email: first.email, password: TEST_PASSWORD }, freshIp());
    expect(res.statusCode).toBe(200);
    expect(remaining(res)).toEqual(['10', '7']);
  });
});
