import { describe, expect, it } from 'vitest';
import { chatWorld, injectStream, messageRows, useChatTestApp } from '../../../test/support/chat.js';

// Two model calls per user and minute. One test only: user ids restart after each truncation, so
// a second test would find the first one's counters.
const { t, fake } = useChatTestApp({ THROTTLE_CHAT_MESSAGES: '2/minute' });

describe('THROTTLE_CHAT_MESSAGES', () => {
  it('counts every model-calling endpoint, streamed or not, per user; over it 429 JSON with Retry-After', async () => {
    const w = await chatWorld(t);
    const first = await injectStream(t, `${w.base}stream/`, { content: 'One' }, w.alice);
    expect(first.res.statusCode).toBe(200);
    const second = await t.post(`${w.base}regenerate/`, { user_message_id: first.done.user_message_id }, w.alice);
    expect(second.statusCode).toBe(201);

    const question = first.done.user_message_id as string;
    for (const [url, body] of [
      [`${w.base}stream/`, { content: 'Three' }],
      [w.base, { content: 'Three' }],
      [`${w.base}regenerate/stream/`, { user_message_id: question }],
      [`${w.base}regenerate/`, { user_message_id: question }],
      [`${w.base}${question}/edit/stream/`, { content: 'Edited' }],
    ] as const) {
      const res = await t.post(url, body, w.alice);
      expect(res.statusCode, url).toBe(429);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json().code).toBe('throttled');
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    expect(fake.requests).toHaveLength(2);
    // Nothing was saved or changed by the refused calls.
    const rows = await messageRows(t, w.chat.id);
    expect(rows).toHaveLength(3);
    expect(rows.find((r) => r.id === question)!.content).toBe('One');

    // Calls that do not reach a model are not throttled.
    expect((await t.get(w.base, w.alice)).statusCode).toBe(200);
    expect((await t.post(`${w.base}stream/stop/`, { stream_id: 'x' }, w.alice)).statusCode).toBe(202);
    expect((await t.patch(`${w.base}${question}/`, { content: 'Plain edit' }, w.alice)).statusCode).toBe(200);

    // Another user has their own allowance.
    const bob = await injectStream(t, `${w.base}stream/`, { content: 'From Bob' }, w.bob);
    expect(bob.res.statusCode).toBe(200);
    expect(bob.done.stopped).toBe(false);
  });
});
