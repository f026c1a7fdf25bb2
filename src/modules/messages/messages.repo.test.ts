import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chatWorld, injectStream, messageRows, useChatTestApp } from '../../../test/support/chat.js';
import { sql } from 'drizzle-orm';
import { openDatabase, queryRows } from '../../db/client.js';
import { findPath, insertMessageOnce, insertUnderNewestReply } from './messages.repo.js';

const { t, fake } = useChatTestApp();

/** A plain reply to `parentId` in `chatId`, as insertMessageOnce takes it. */
const plainReply = (chatId: string, parentId: string, content: string) => ({
  id: randomUUID(),
  sessionId: chatId,
  role: 'assistant' as const,
  content,
  parentId,
  stopped: false,
  usage: null,
  aiModel: 'gpt-4.1-mini',
  sources: [],
  streamId: 's',
});

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
    const saved = await insertMessageOnce(t.deps.database.db, plainReply(w.chat.id, first.done.user_message_id as string, ''));
    expect(saved).toMatchObject({ usage: null, sources: [] });
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('the send path statements and an added column (a migration under a running process)', () => {
  it('keep working on a connection that prepared them before the column was added', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'R1' });
    const first = await injectStream(t, `${w.base}stream/`, { content: 'Question' }, w.alice);
    // One connection, so each statement runs prepared on it before and after the change.
    const database = await openDatabase({ url: t.database.url, poolSize: 1 });
    const reply = (content: string) => plainReply(w.chat.id, first.done.user_message_id as string, content);
    const user = (content: string) => ({ sessionId: w.chat.id, role: 'user' as const, content, authorId: null, attachments: [] });
    try {
      await insertMessageOnce(database.db, reply('before'));
      const before = await insertUnderNewestReply(database.db, user('before'));
      // Under the newest reply: the one just saved, beside R1.
      expect((await findPath(database.db, before.message.id)).map((m) => m.content)).toEqual(['Question', 'before', 'before']);
      await queryRows(database.db, sql`ALTER TABLE messages ADD COLUMN added_by_a_later_release text`);
      try {
        expect(await insertMessageOnce(database.db, reply('after'))).toMatchObject({ content: 'after' });
        const after = await insertUnderNewestReply(database.db, user('after'));
        expect(after.message).toMatchObject({ content: 'after', role: 'user' });
        expect((await findPath(database.db, after.message.id)).map((m) => m.content)).toEqual(['Question', 'after', 'after']);
      } finally {
        await queryRows(database.db, sql`ALTER TABLE messages DROP COLUMN added_by_a_later_release`);
      }
    } finally {
      await database.close();
    }
  });
});
