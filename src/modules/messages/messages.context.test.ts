import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { chatWorld, deltaText, injectStream, messageRows, openaiTurns, useChatTestApp } from '../../../test/support/chat.js';
import { messages } from './messages.table.js';

const { t, fake } = useChatTestApp();

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a streamed send reads its branch in the statement that stores the user message (issue 14: fewer round trips before the model)', () => {
  it('the model sees the branch down to the user message', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'R1' }, { text: 'R2' });
    await injectStream(t, `${w.base}stream/`, { content: 'Question A' }, w.alice);
    const b = await injectStream(t, `${w.base}stream/`, { content: 'Question B' }, w.alice);
    expect(deltaText(b.events)).toBe('R2');
    expect(openaiTurns(fake.requestsTo('openai.chat')[1]!.body)).toEqual([
      { role: 'user', text: 'Question A' },
      { role: 'assistant', text: 'R1' },
      { role: 'user', text: 'Question B' },
    ]);
  });

  it('a reply that lands while the send is at the billing gate: the message hangs under it and the model sees it', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'R1' }, { text: 'R3' });
    const a = await injectStream(t, `${w.base}stream/`, { content: 'Question A' }, w.alice);
    // While the send is at the billing gate, another reply to A is saved.
    const db = t.deps.database.db;
    const credit = t.deps.services.credit;
    const admitWith = credit.admitWith.bind(credit);
    let late: string | undefined;
    vi.spyOn(credit, 'admitWith').mockImplementation(async (...args) => {
      await sleep(50);
      const [row] = await db
        .insert(messages)
        .values({ sessionId: w.chat.id, role: 'assistant', content: 'R2 (late)', parentId: a.done.user_message_id as string })
        .returning();
      late = row!.id;
      return admitWith(...args);
    });
    const b = await injectStream(t, `${w.base}stream/`, { content: 'Question B' }, w.alice);
    expect(b.res.statusCode).toBe(200);
    expect(late).toBeDefined();
    const rows = await messageRows(t, w.chat.id);
    expect(rows.find((r) => r.id === b.done.user_message_id)).toMatchObject({ parentId: late, content: 'Question B' });
    expect(openaiTurns(fake.requestsTo('openai.chat')[1]!.body)).toEqual([
      { role: 'user', text: 'Question A' },
      { role: 'assistant', text: 'R2 (late)' },
      { role: 'user', text: 'Question B' },
    ]);
  });
});
