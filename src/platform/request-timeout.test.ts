import { describe, expect, it } from 'vitest';
import { createTestApp } from '../../test/support/app.js';
import { rawRequest } from '../../test/support/raw-http.js';
import { chatWorld, deltaText, listenUrl, messageRows, openHttpStream, useChatTestApp } from '../../test/support/chat.js';
import { users } from '../modules/users/users.table.js';

/*
 * REQUEST_TIMEOUT_SECONDS: a request must arrive, headers and body, within the limit, or it is
 * answered 408 in our shape and its connection closed (slow or stalled clients, slowloris). The
 * answer itself may take longer: a stream or a slow reply is never cut by it. Over real HTTP:
 * app.inject does not go through Node's server.
 */

const LIMIT_SECONDS = 1;
const { t, fake } = useChatTestApp({ REQUEST_TIMEOUT_SECONDS: String(LIMIT_SECONDS) });

/** Writes `bytes` on a new connection and never sends more; what came back once the server closed it. */
const stall = (port: number, bytes: string) => rawRequest(port, bytes, { end: false });

const portOf = async () => Number(new URL(await listenUrl(t.app)).port);

function expectTimedOut(answer: { status: number; body: string; afterMs: number }) {
  expect(answer.status, answer.body).toBe(408);
  expect(JSON.parse(answer.body)).toEqual({ detail: 'The request took too long to arrive.', code: 'request_timeout' });
  // Within the limit plus the check interval (a quarter of it), with room for a loaded machine.
  expect(answer.afterMs).toBeGreaterThanOrEqual(LIMIT_SECONDS * 1000 - 50);
  expect(answer.afterMs).toBeLessThan(LIMIT_SECONDS * 1000 * 4);
}

describe('a request that does not arrive in time', () => {
  it('a body that stops arriving is 408 request_timeout, the connection closed and nothing created', async () => {
    const body = JSON.stringify({ email: 'slow@example.com', password: 'a-long-enough-password-1', re_password: 'a-long-enough-password-1' });
    const answer = await stall(
      await portOf(),
      `POST /auth/users/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
    );
    expectTimedOut(answer);
    expect(await t.deps.database.db.select().from(users)).toEqual([]);
  });

  it('headers that never end are 408 request_timeout too', async () => {
    expectTimedOut(await stall(await portOf(), 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a'));
  });

  it('other connections are served while one stalls', async () => {
    const stalled = stall(await portOf(), 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const healthy = await fetch(`${await listenUrl(t.app)}/healthz`);
    expect(healthy.status).toBe(200);
    expectTimedOut(await stalled);
  });
});

describe('an answer that takes longer than the limit', () => {
  it('a streamed reply lasting past it ends with done, saved whole', async () => {
    const w = await chatWorld(t);
    // Each chunk comes after more than the limit: an idle-connection timeout would cut this too.
    const words = ['one ', 'two ', 'three '];
    fake.enqueue({ chunks: words, delayMs: LIMIT_SECONDS * 1000 + 200 });
    const stream = await openHttpStream(await listenUrl(t.app), `${w.base}stream/`, { as: w.alice, body: { content: 'Take your time' } });
    expect(stream.status).toBe(200);
    await stream.ended;
    const events = stream.events();
    expect(events.at(-1)!.event, stream.raw).toBe('done');
    expect(deltaText(events)).toBe(words.join(''));
    expect((await messageRows(t, w.chat.id)).map((m) => m.content)).toEqual(['Take your time', words.join('')]);
  });

  it('a JSON send whose reply takes past it is answered 201', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Slowly but surely.', delayMs: 600 });
    const res = await fetch(`${await listenUrl(t.app)}${w.base}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Answer when ready' }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await res.json()).toMatchObject({ role: 'assistant', content: 'Slowly but surely.' });
  });
});

describe('the setting', () => {
  it.each([
    ['300 (the default)', {}, { requestTimeout: 300_000, headersTimeout: 60_000 }],
    ['1', { REQUEST_TIMEOUT_SECONDS: '1' }, { requestTimeout: 1_000, headersTimeout: 1_000 }],
    ['0 (no limit: a proxy in front enforces one)', { REQUEST_TIMEOUT_SECONDS: '0' }, { requestTimeout: 0, headersTimeout: 60_000 }],
  ])('%s', async (_name, env, expected) => {
    const app = await createTestApp(env, {}, { startWorker: false });
    try {
      expect({ requestTimeout: app.app.server.requestTimeout, headersTimeout: app.app.server.headersTimeout }).toEqual(expected);
    } finally {
      await app.close();
    }
  });
});
