import { describe, expect, it } from 'vitest';
import { forgetCachedAccess } from '../../../test/support/app.js';
import { chatWorld, injectStream, useChatTestApp } from '../../../test/support/chat.js';
import { recordSpans } from '../../../test/support/spans.js';

// Tracing on before the app is built (request and SQL spans are installed then).
const exporter = recordSpans();
const { t, fake } = useChatTestApp();

/** The SQL of one streamed send, split at the model call: what ran before it and what after. */
async function statementsOfSend(url: string, as: { token: string }) {
  exporter.reset();
  fake.enqueue({ text: 'Fine.', chunks: ['Fine.'] });
  const { res } = await injectStream(t, url, { role: 'user', content: 'How are you?' }, as);
  expect(res.statusCode).toBe(200);
  const spans = exporter.getFinishedSpans();
  const model = spans.find((s) => s.attributes['gen_ai.operation.name'] === 'chat');
  expect(model).toBeDefined();
  // Span times have millisecond resolution: a statement started in the same millisecond as the
  // model call ran before it (the call awaits it; a statement after the call waits for its reply).
  const startOf = (s: (typeof spans)[number]) => s.startTime[0] * 1e9 + s.startTime[1];
  const sql = spans
    .filter((s) => s.spanContext().traceId === model!.spanContext().traceId && s.attributes['db.system.name'] === 'postgresql')
    .sort((a, b) => startOf(a) - startOf(b));
  const texts = (list: typeof sql) => list.map((s) => String(s.attributes['db.query.text']));
  const before = sql.filter((s) => startOf(s) <= startOf(model!));
  return { before: texts(before), after: texts(sql.filter((s) => !before.includes(s))) };
}

describe('statements of a streamed send (issue 14: at most 8 before the model is called, no lock held)', () => {
  it('cold (the first request of a token) and warm (credentials and membership cached)', async () => {
    const w = await chatWorld(t);
    forgetCachedAccess(t);
    const cold = await statementsOfSend(`${w.base}stream/`, w.alice);
    const warm = await statementsOfSend(`${w.base}stream/`, w.alice);
    expect(cold.before.length, cold.before.join('\n')).toBeLessThanOrEqual(8);
    // Warm (the chat and whether it has knowledge cached too): one statement, the credit hold and
    // the user message with its path (the message only if the credit was held).
    expect(warm.before, warm.before.join('\n')).toHaveLength(1);
    expect(warm.before[0]).toMatch(/insert into credit_reservations[\s\S]*insert into messages/i);
    for (const text of [...cold.before, ...warm.before]) {
      // Every statement commits by itself: no transaction, no row lock waiting on a round trip.
      expect(text).not.toMatch(/^\s*(begin|commit)\b|for update/i);
    }
    // After the model: the reply, the charge, the chat's activity.
    expect(warm.after.length, warm.after.join('\n')).toBeLessThanOrEqual(3);
    expect(cold.before.some((text) => text.includes('"auth_tokens"'))).toBe(true);
    expect(warm.before.some((text) => text.includes('"auth_tokens"') || text.includes('"workspace_memberships"'))).toBe(false);
  });
});
