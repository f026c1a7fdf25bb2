import { describe, expect, it } from 'vitest';
import { chatWorld, deltaText, injectStream, ledgerRows, messageRows, useChatTestApp } from '../../../test/support/chat.js';
import type { KnowledgeHit, KnowledgeSearch } from '../agents/knowledge-port.js';

/** A knowledge search with fixed hits for the chats in `withKnowledge`; every search is recorded. */
const withKnowledge = new Set<string>();
const searches: Array<{ workspaceId: string; chatId: string; query: string; limit: number }> = [];
const hits: KnowledgeHit[] = [
  { chunk_id: 'chunk-2', document_id: 'doc-1', document_name: 'Handbook.pdf', content: 'Vacation: 25 days a year.', score: 0.61, page: 4 },
  { chunk_id: 'chunk-9', document_id: 'doc-2', document_name: 'Policy.md', content: 'Carry over up to 5 days.', score: 0.83 },
];
const knowledge: KnowledgeSearch = {
  hasKnowledge: async (chat) => withKnowledge.has(chat.id),
  search: async (input) => {
    searches.push(input);
    return hits;
  },
};

const { t, fake } = useChatTestApp({}, { knowledge });

const toolCall = { id: 'call_kb1', name: 'search_knowledge_base', args: { query: 'vacation policy' } };

describe('agent frameworks', () => {
  it('tools: the model searches the knowledge base; tool events, then text; the reply lists its sources', async () => {
    searches.length = 0;
    const w = await chatWorld(t, { agent_framework: 'tools' });
    withKnowledge.add(w.chat.id);
    fake.enqueue(
      { toolCalls: [toolCall], usage: { inputTokens: 20, outputTokens: 4 } },
      { text: 'You get 25 days and may carry over 5.', usage: { inputTokens: 60, outputTokens: 11 } },
    );

    const { res, events, done } = await injectStream(t, `${w.base}stream/`, { content: 'How much vacation do I get?' }, w.alice);
    expect(res.statusCode).toBe(200);
    const tools = events.filter((e) => e.event === 'tool');
    expect(tools.map((e) => e.data)).toEqual([
      { id: 'call_kb1', name: 'search_knowledge_base', status: 'started' },
      { id: 'call_kb1', name: 'search_knowledge_base', status: 'finished' },
    ]);
    const order = events.map((e) => e.event);
    expect(order.indexOf('delta')).toBeGreaterThan(order.lastIndexOf('tool'));
    expect(order.at(-1)).toBe('done');
    expect(deltaText(events)).toBe('You get 25 days and may carry over 5.');
    // Usage adds up both model calls.
    expect(done.usage).toEqual({ prompt_tokens: 80, completion_tokens: 15, total_tokens: 95 });

    expect(searches).toEqual([{ workspaceId: w.ws.id, chatId: w.chat.id, query: 'vacation policy', limit: 6 }]);

    // First request offers the tool; the second carries its result.
    const [first, second] = fake.requestsTo('openai.chat');
    expect(first!.body.tools).toEqual([
      expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'search_knowledge_base' }) }),
    ]);
    const toolMessage = second!.body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(toolMessage.tool_call_id).toBe('call_kb1');
    expect(JSON.parse(toolMessage.content)).toEqual([
      { chunk_id: 'chunk-2', document: 'Handbook.pdf', page: 4, page_unit: 'page', content: 'Vacation: 25 days a year.' },
      { chunk_id: 'chunk-9', document: 'Policy.md', page: null, content: 'Carry over up to 5 days.' },
    ]);

    // The saved reply lists the chunks, best first.
    const sources = [
      { document_id: 'doc-2', document_name: 'Policy.md', chunk_id: 'chunk-9', score: 0.83 },
      { document_id: 'doc-1', document_name: 'Handbook.pdf', chunk_id: 'chunk-2', score: 0.61, page: 4 },
    ];
    const reply = (await messageRows(t, w.chat.id)).find((r) => r.id === done.message_id)!;
    expect(reply).toMatchObject({ content: 'You get 25 days and may carry over 5.', sources });
    expect(done.sources).toEqual(sources);
    expect((await t.get(`${w.base}${done.message_id}/`, w.alice)).json().sources).toEqual(sources);

    const ledger = await ledgerRows(t, w.ws.id);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ inputTokens: 80, outputTokens: 15 });
  });

  it('tools with Claude: the same events through the Anthropic client', async () => {
    const w = await chatWorld(t, { ai_model: 'claude-haiku-4-5' });
    withKnowledge.add(w.chat.id);
    fake.enqueue({ toolCalls: [{ ...toolCall, id: 'toolu_kb' }] }, { text: 'Twenty-five days.' });
    const { events, done } = await injectStream(t, `${w.base}stream/`, { content: 'Vacation?' }, w.alice);
    expect(events.filter((e) => e.event === 'tool').map((e) => e.data)).toEqual([
      { id: 'toolu_kb', name: 'search_knowledge_base', status: 'started' },
      { id: 'toolu_kb', name: 'search_knowledge_base', status: 'finished' },
    ]);
    expect(deltaText(events)).toBe('Twenty-five days.');
    const [first, second] = fake.requestsTo('anthropic.messages');
    expect(first!.body.tools.map((tool: { name: string }) => tool.name)).toEqual(['search_knowledge_base']);
    const result = second!.body.messages.at(-1).content.find((p: { type: string }) => p.type === 'tool_result');
    expect(result.tool_use_id).toBe('toolu_kb');
    expect((await messageRows(t, w.chat.id)).find((r) => r.id === done.message_id)!.sources).toHaveLength(2);
  });

  it('tools without attached knowledge offers no tools', async () => {
    const w = await chatWorld(t, { agent_framework: 'tools' });
    await injectStream(t, `${w.base}stream/`, { content: 'Hi' }, w.alice);
    expect(fake.requestsTo('openai.chat')[0]!.body).not.toHaveProperty('tools');
  });

  it('direct with knowledge: one search for the message, the chunks in the prompt, cited in done and the reply', async () => {
    searches.length = 0;
    const w = await chatWorld(t, { agent_framework: 'direct', system_prompt: 'Be brief.' });
    withKnowledge.add(w.chat.id);
    fake.enqueue({ text: 'Twenty-five days [1].' });
    const { events, done } = await injectStream(t, `${w.base}stream/`, { content: 'How much vacation?' }, w.alice);
    expect(events.filter((e) => e.event === 'tool')).toEqual([]);
    expect(deltaText(events)).toBe('Twenty-five days [1].');
    // Retrieved once, before the call, with the user's message.
    expect(searches).toEqual([{ workspaceId: w.ws.id, chatId: w.chat.id, query: 'How much vacation?', limit: 6 }]);
    expect(fake.requests).toHaveLength(1);
    const body = fake.requests[0]!.body;
    expect(body).not.toHaveProperty('tools');
    expect(body.messages[0]).toEqual({
      role: 'system',
      content:
        'Be brief.\n\n' +
        'Excerpts from the knowledge bases attached to this chat, retrieved for the latest message. ' +
        'Use them when they are relevant and cite them by number.\n\n' +
        '[1] (Handbook.pdf, page 4)\nVacation: 25 days a year.\n\n' +
        '[2] (Policy.md)\nCarry over up to 5 days.',
    });
    expect(body.messages.at(-1)).toEqual({ role: 'user', content: 'How much vacation?' });
    const sources = [
      { document_id: 'doc-2', document_name: 'Policy.md', chunk_id: 'chunk-9', score: 0.83 },
      { document_id: 'doc-1', document_name: 'Handbook.pdf', chunk_id: 'chunk-2', score: 0.61, page: 4 },
    ];
    expect(done.sources).toEqual(sources);
    expect((await messageRows(t, w.chat.id)).find((r) => r.id === done.message_id)!.sources).toEqual(sources);
    expect((await t.get(`${w.base}${done.message_id}/`, w.alice)).json().sources).toEqual(sources);
  });

  it('direct without knowledge: no search, the prompt unchanged, no sources', async () => {
    searches.length = 0;
    const w = await chatWorld(t, { agent_framework: 'direct' });
    fake.enqueue({ text: 'Straight answer.' });
    const { done } = await injectStream(t, `${w.base}stream/`, { content: 'Vacation?' }, w.alice);
    expect(searches).toEqual([]);
    expect(fake.requests[0]!.body.messages.map((m: { role: string }) => m.role)).toEqual(['user']);
    expect(done.sources).toEqual([]);
  });

  it('done carries the sources on regenerate and edit streams too', async () => {
    const w = await chatWorld(t, { agent_framework: 'direct' });
    withKnowledge.add(w.chat.id);
    const first = await injectStream(t, `${w.base}stream/`, { content: 'Vacation?' }, w.alice);
    const userMessageId = first.done.user_message_id as string;
    const regenerated = await injectStream(t, `${w.base}regenerate/stream/`, { user_message_id: userMessageId }, w.alice);
    expect(regenerated.done.sources.map((s: { chunk_id: string }) => s.chunk_id)).toEqual(['chunk-9', 'chunk-2']);
    const edited = await injectStream(t, `${w.base}${userMessageId}/edit/stream/`, { content: 'Carry over?' }, w.alice);
    expect(edited.done.sources.map((s: { chunk_id: string }) => s.chunk_id)).toEqual(['chunk-9', 'chunk-2']);
  });
});
