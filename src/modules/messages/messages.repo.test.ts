import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chatWorld, injectStream, messageRows, useChatTestApp } from '../../../test/support/chat.js';
import { insertMessageOnce } from './messages.repo.js';

const { t, fake } = useChatTestApp();

describe('insertMessageOnce (a reply saved once per id, as a repeated agent run needs)', () => {
  it('saves the reply with every value; a second insert with the same id returns the saved row and stores nothing', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'R1' });
    const first = await injectStream(t, `${w.base}stream/`, { content: 'Question' }, w.alice);
    const parentId = first.done.user_message_id as string;
    const db = t.deps.database.db;
    const values = {
      id: randomUUID(),
      sessionId: w.chat.id,
      role: 'assistant' as const,
      content: 'Saved once',
      parentId,
      stopped: true,
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      aiModel: 'gpt-4.1-mini',
      sources: [{ document_id: 'd', document_name: 'Doc', chunk_id: 'c', score: 0.5 }],
      streamId: 'stream-1',
    };
    const saved = await insertMessageOnce(db, values);
    expect(saved).toMatchObject({ ...values, rating: null, reason: '', authorId: null });
    expect(saved.createdAt).toBeInstanceOf(Date);

    const again = await insertMessageOnce(db, { ...values, content: 'A second run' });
    expect(again).toEqual(saved);
    const rows = (await messageRows(t, w.chat.id)).filter((r) => r.id === values.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ content: 'Saved once', usage: values.usage, sources: values.sources });
  });

  it('a reply without usage stores null', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'R1' });
    const first = await injectStream(t, `${w.base}stream/`, { content: 'Question' }, w.alice);
    const saved = await insertMessageOnce(t.deps.database.db, {
      id: randomUUID(),
      sessionId: w.chat.id,
      role: 'assistant',
      content: '',
      parentId: first.done.user_message_id as string,
      stopped: false,
      usage: null,
      aiModel: 'gpt-4.1-mini',
      sources: [],
      streamId: 's',
    });
    expect(saved).toMatchObject({ usage: null, sources: [] });
  });
});
