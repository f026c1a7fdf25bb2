import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { injectStream, useChatTestApp } from '../../../test/support/chat.js';
import { createKb, fixture, ingestFile, kbsBase, LIFTED_THROTTLES } from '../../../test/support/documents.js';
import { addMember, newUser, newWorkspace } from '../../../test/support/factories.js';
import { documentChunks } from '../documents/documents.table.js';

/*
 * End to end: upload → ingestion → knowledge base → attached to a chat → the `tools` agent calls
 * `search_knowledge_base` → the model receives the document's text → the reply cites the chunk.
 */
const { t, fake } = useChatTestApp({ ...LIFTED_THROTTLES });

describe('knowledge bases in a conversation', () => {
  it('searches the attached knowledge base through the agent tool and cites the chunk in sources', async () => {
    const owner = await newUser(t);
    const alice = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await addMember(t, ws, alice);

    // 1. Upload a document and wait for it to be ready.
    const { document, status } = await ingestFile(t, ws.id, alice, {
      name: 'sourdough.html',
      contentType: 'text/html',
      bytes: fixture('article.html'),
    });
    expect(status).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS' } });
    const [chunk] = await t.deps.database.db.select().from(documentChunks).where(eq(documentChunks.documentId, document.id));

    // 2. A knowledge base holding it, attached to a chat.
    const kb = await createKb(t, ws.id, alice, { name: 'Baking' });
    expect((await t.post(`${kbsBase(ws.id)}${kb.id}/add-documents/`, { document_ids: [document.id] }, alice)).statusCode).toBe(200);
    const created = await t.post(`/api/workspaces/${ws.id}/chats/`, { name: 'Bread questions' }, alice);
    expect(created.statusCode, created.body).toBe(201);
    const chatId = created.json().id as string;
    const attach = await t.post(`/api/workspaces/${ws.id}/chats/${chatId}/knowledge-bases/attach/`, { knowledge_base_ids: [kb.id] }, alice);
    expect(attach.statusCode, attach.body).toBe(200);

    // 3. The model first asks for the tool, then answers from its result.
    fake.enqueue(
      { toolCalls: [{ id: 'call_kb_1', name: 'search_knowledge_base', args: { query: 'how often to feed a sourdough starter' } }] },
      { text: 'Feed it once a day when it lives on the counter.' },
    );
    const base = `/api/workspaces/${ws.id}/chats/${chatId}/messages/`;
    const { res, events, done } = await injectStream(t, `${base}stream/`, { role: 'user', content: 'How often do I feed my starter?' }, alice);
    expect(res.statusCode, res.body).toBe(200);

    const toolEvents = events.filter((e) => e.event === 'tool').map((e) => e.data);
    expect(toolEvents).toEqual([
      { id: 'call_kb_1', name: 'search_knowledge_base', status: 'started' },
      { id: 'call_kb_1', name: 'search_knowledge_base', status: 'finished' },
    ]);
    const started = events.findIndex((e) => e.event === 'tool');
    const firstDelta = events.findIndex((e) => e.event === 'delta');
    expect(started).toBeLessThan(firstDelta);
    expect(events.filter((e) => e.event === 'error')).toEqual([]);
    expect(done).toMatchObject({ message_id: expect.any(String), stopped: false });

    // 4. The first request offered the tool; the second carried its result: the document's text.
    const requests = fake.requestsTo('openai.chat');
    expect(requests).toHaveLength(2);
    expect(requests[0]!.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual(['search_knowledge_base']);
    const toolMessage = requests[1]!.body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(toolMessage).toMatchObject({ tool_call_id: 'call_kb_1' });
    const toolResult = typeof toolMessage.content === 'string' ? toolMessage.content : JSON.stringify(toolMessage.content);
    expect(toolResult).toContain('Feed the starter once a day');
    expect(toolResult).toContain(chunk!.id);
    expect(requests[1]!.body.messages.at(-1).role).toBe('tool');

    // 5. The saved reply cites the chunk it used.
    const saved = await t.get(`${base}${done.message_id}/`, alice);
    expect(saved.statusCode).toBe(200);
    expect(saved.json()).toMatchObject({ role: 'assistant', content: 'Feed it once a day when it lives on the counter.' });
    expect(saved.json().sources).toEqual([
      { document_id: document.id, document_name: 'sourdough.html', chunk_id: chunk!.id, score: expect.any(Number) },
    ]);
    expect(saved.json().sources[0].score).toBeGreaterThan(0);
  });

  it('offers no tool when no knowledge base is attached', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const created = await t.post(`/api/workspaces/${ws.id}/chats/`, { name: 'Plain' }, owner);
    const chatId = created.json().id as string;
    fake.enqueue({ text: 'Hello.' });
    const { res, done } = await injectStream(t, `/api/workspaces/${ws.id}/chats/${chatId}/messages/stream/`, { content: 'Hi' }, owner);
    expect(res.statusCode).toBe(200);
    expect(fake.requestsTo('openai.chat')[0]!.body.tools).toBeUndefined();
    const saved = await t.get(`/api/workspaces/${ws.id}/chats/${chatId}/messages/${done.message_id}/`, owner);
    expect(saved.json().sources).toEqual([]);
  });
});
