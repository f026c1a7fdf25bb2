import { describe, expect, it } from 'vitest';
import { chatWorld, injectStream, useChatTestApp } from '../../../test/support/chat.js';

// Its own file: user ids restart after each truncation, so counters would carry over between tests.
const { t } = useChatTestApp({ THROTTLE_CHAT_MESSAGES: '2/minute' });

describe('RateLimit headers', () => {
  it('report the allowance on every answer of a throttled endpoint, 429 included, and not elsewhere', async () => {
    const w = await chatWorld(t);
    const limits = (res: { headers: Record<string, unknown> }) => ({
      limit: res.headers['ratelimit-limit'],
      remaining: res.headers['ratelimit-remaining'],
      reset: Number(res.headers['ratelimit-reset']),
    });
    // A stream carries them in its response headers too.
    const streamed = await injectStream(t, `${w.base}stream/`, { content: 'One' }, w.alice);
    expect(streamed.res.statusCode).toBe(200);
    expect(limits(streamed.res)).toMatchObject({ limit: '2', remaining: '1' });
    const second = await t.post(w.base, { content: 'Two' }, w.alice);
    expect(second.statusCode).toBe(201);
    expect(limits(second)).toMatchObject({ limit: '2', remaining: '0' });
    expect(limits(second).reset).toBeGreaterThanOrEqual(1);
    expect(limits(second).reset).toBeLessThanOrEqual(60);

    const refused = await t.post(w.base, { content: 'Three' }, w.alice);
    expect(refused.statusCode).toBe(429);
    expect(limits(refused)).toMatchObject({ limit: '2', remaining: '0' });
    expect(Number(refused.headers['retry-after'])).toBe(limits(refused).reset);

    // An endpoint without a throttle carries none.
    const listed = await t.get(w.base, w.alice);
    expect(listed.statusCode).toBe(200);
    expect(listed.headers).not.toHaveProperty('ratelimit-limit');
    expect(listed.headers).not.toHaveProperty('ratelimit-remaining');
    expect(listed.headers).not.toHaveProperty('ratelimit-reset');
  });
});
