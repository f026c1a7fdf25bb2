import { describe, expect, it } from 'vitest';
import { addMember, newUser, type TestUser } from '../../../test/support/factories.js';
import { useListeningChatApp } from '../../../test/support/listening-app.js';
import { ApiError, createClient, StreamDisconnectedError, type StreamEvent } from '../src/index.js';

/*
 * The SDK against the real app listening on a port (fake model server for the replies): every
 * call goes over real HTTP through the SDK's own fetch path.
 */
const app = useListeningChatApp({ THROTTLE_LOGIN: '3/minute' });
const { fake } = app;

const clientFor = (user: TestUser, fetch?: (request: Request) => Promise<Response>) =>
  createClient({ baseUrl: app.baseUrl, token: user.token, fetch, reconnect: { initialDelayMs: 20 } });

async function chatOf(user: TestUser) {
  const client = clientFor(user);
  const ws = await client.workspaces.create({ name: 'SDK workspace' });
  const chat = await client.chats.create(ws.id, { name: 'SDK chat' });
  return { client, ws, chat };
}

const collect = async (stream: AsyncIterable<StreamEvent>) => {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
};

/** `count` one-word chunks, `delayMs` apart. */
const slowReply = (count: number, delayMs: number) => {
  const chunks = Array.from({ length: count }, (_, i) => `word${i + 1} `);
  return { chunks, text: chunks.join(''), delayMs };
};

describe('the TypeScript SDK', () => {
  it('creates a workspace and a chat, sends a message (JSON) and lists the messages', async () => {
    const { client, ws, chat } = await chatOf(await newUser(app.t));
    expect((await client.workspaces.list()).results.map((w) => w.id)).toEqual([ws.id]);
    fake.enqueue({ text: 'Hello from the model.' });
    const reply = await client.messages.send(ws.id, chat.id, { content: 'Hi' });
    expect(reply).toMatchObject({ role: 'assistant', content: 'Hello from the model.' });
    const page = await client.messages.list(ws.id, chat.id);
    expect(page.count).toBe(2);
    expect(page.results.map((m) => m.role).sort()).toEqual(['assistant', 'user']);
  });

  it('streams a reply with tool, delta and done events, typed and in order', async () => {
    const { client, ws, chat } = await chatOf(await newUser(app.t));
    const kb = await client.knowledgeBases.create(ws.id, { name: 'Handbook' });
    await client.chats.update(ws.id, chat.id, { agent_framework: 'tools' });
    await client.chats.attachKnowledgeBases(ws.id, chat.id, [kb.id]);
    fake.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'search_knowledge_base', args: { query: 'vacation' } }] },
      { text: 'Twenty-five days.', chunks: 3 },
    );

    const stream = client.messages.stream(ws.id, chat.id, { content: 'How much vacation?' });
    const events = await collect(stream);
    expect(events.filter((e) => e.event === 'tool').map((e) => e.data)).toEqual([
      { id: 'call_1', name: 'search_knowledge_base', status: 'started' },
      { id: 'call_1', name: 'search_knowledge_base', status: 'finished' },
    ]);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)));
    expect(events.at(-1)!.event).toBe('done');
    expect(stream.text).toBe('Twenty-five days.');
    const done = events.at(-1)!;
    if (done.event !== 'done') throw new Error('unreachable');
    expect(done.data).toMatchObject({ stopped: false, sources: [] });
    const saved = await client.raw.GET('/api/workspaces/{ws}/chats/{session}/messages/{id}/', {
      params: { path: { ws: ws.id, session: chat.id, id: done.data.message_id } },
    });
    expect(saved.data).toMatchObject({ id: done.data.message_id, role: 'assistant', content: 'Twenty-five days.' });
  });

  it('ends with an error event when the model fails after the stream opened; finished() throws it', async () => {
    const { client, ws, chat } = await chatOf(await newUser(app.t));
    fake.enqueue({ text: 'one two three', chunks: 3, failAfterChunks: 1 });
    const events = await collect(client.messages.stream(ws.id, chat.id, { content: 'Fail please' }));
    expect(events.at(-1)!.event).toBe('error');
    expect(events.filter((e) => e.event === 'done')).toEqual([]);

    fake.enqueue({ text: 'one two three', chunks: 3, failAfterChunks: 1 });
    await expect(client.messages.stream(ws.id, chat.id, { content: 'Fail again' }).finished()).rejects.toMatchObject({
      name: 'StreamFailedError',
    });
  });

  it('stop(): the stream ends early with done and stopped: true', async () => {
    const { client, ws, chat } = await chatOf(await newUser(app.t));
    fake.enqueue(slowReply(20, 100));
    const stream = client.messages.stream(ws.id, chat.id, { content: 'Talk for a while' });
    const events: StreamEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (events.length === 1) await stream.stop();
    }
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data).toMatchObject({ stopped: true });
    expect(events.filter((e) => e.event === 'delta').length).toBeLessThan(20);
  });

  it('reattaches transparently after the connection drops mid-event: every event once, the same done', async () => {
    const user = await newUser(app.t);
    const { ws, chat } = await chatOf(user);
    const reply = slowReply(8, 120);
    fake.enqueue(reply);
    // Cuts the first streamed body after 150 bytes (inside the second or third event) and closes
    // the real connection under it, as a network failure would.
    const requests: string[] = [];
    let cut = false;
    const droppingFetch = async (request: Request) => {
      requests.push(`${request.method} ${new URL(request.url).pathname} ${request.headers.get('last-event-id') ?? '-'}`);
      const response = await fetch(request);
      if (cut || request.method !== 'POST' || !request.url.endsWith('/messages/stream/') || !response.body) return response;
      cut = true;
      const reader = response.body.getReader();
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          const room = 150 - sent;
          if (value.byteLength < room) {
            sent += value.byteLength;
            return controller.enqueue(value);
          }
          controller.enqueue(value.subarray(0, room));
          await reader.cancel();
          controller.error(new TypeError('terminated'));
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };

    const client = clientFor(user, droppingFetch);
    const stream = client.messages.stream(ws.id, chat.id, { content: 'Go slowly' });
    const events = await collect(stream);
    expect(cut).toBe(true);
    expect(stream.reattachCount).toBe(1);
    expect(requests[1]).toMatch(new RegExp(`^GET /api/workspaces/${ws.id}/chats/${chat.id}/messages/stream/${stream.streamId}/ \\d+$`));
    // Every event exactly once, numbered 1..n with no gap, and the whole reply text.
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)));
    expect(stream.text).toBe(reply.text);
    expect(events.at(-1)!.event).toBe('done');

    // The same done as a full replay after the end, and as the saved reply.
    const replay = await collect(clientFor(user).messages.reattach(ws.id, chat.id, stream.streamId));
    expect(replay).toEqual(events);
    const page = await client.messages.list(ws.id, chat.id);
    const saved = page.results.find((m) => m.role === 'assistant')!;
    expect(events.at(-1)!.data).toMatchObject({ message_id: saved.id, stopped: false });
    expect(saved.content).toBe(reply.text);
  });

  it('gives up after the configured reattach attempts with StreamDisconnectedError', async () => {
    const user = await newUser(app.t);
    const { ws, chat } = await chatOf(user);
    fake.enqueue(slowReply(6, 100));
    let reattachAttempts = 0;
    // The first body ends after its first event (a cut connection); every reattach fails on the network.
    const failingFetch = async (request: Request) => {
      if (request.method === 'GET') {
        reattachAttempts += 1;
        throw new TypeError('fetch failed');
      }
      const response = await fetch(request);
      const reader = response.body!.getReader();
      let text = '';
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          text += new TextDecoder().decode(value);
          controller.enqueue(value);
          if (text.includes('\n\n')) {
            await reader.cancel();
            controller.close();
          }
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const client = createClient({ baseUrl: app.baseUrl, token: user.token, fetch: failingFetch, reconnect: { retries: 3, initialDelayMs: 5 } });
    const stream = client.messages.stream(ws.id, chat.id, { content: 'Slowly' });
    const events: StreamEvent[] = [];
    const error = await (async () => {
      for await (const event of stream) events.push(event);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamDisconnectedError);
    expect(error).toMatchObject({ streamId: stream.streamId, lastEventId: '1' });
    expect(events.map((e) => e.id)).toEqual(['1']);
    expect(reattachAttempts).toBe(3);
    // Let the reply finish before the next test truncates the tables.
    await clientFor(user).messages.reattach(ws.id, chat.id, stream.streamId).finished();
  });

  it('throws ApiError with status, code and detail (403, 404) and retryAfter on 429', async () => {
    const owner = await newUser(app.t);
    const { client, ws, chat } = await chatOf(owner);
    const member = await newUser(app.t);
    await addMember(app.t, ws, member);

    const missing = await client.chats.get(ws.id, '0198f2b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });

    const denied = await clientFor(member).workspaces.delete(ws.id).catch((e: unknown) => e);
    expect(denied).toMatchObject({ status: 403, code: 'permission_denied' });
    expect((denied as ApiError).detail).toEqual(expect.any(String));

    // The stream helper throws the refusal before any event (a chat the member cannot read).
    const refused = await clientFor(member).messages.stream(ws.id, chat.id, { content: 'x' }).finished().catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: expect.any(Number), code: expect.stringMatching(/^(not_found|permission_denied)$/) });

    const anonymous = createClient({ baseUrl: app.baseUrl });
    const email = `throttled-${Date.now()}@example.com`;
    let throttled: unknown;
    for (let attempt = 0; attempt < 5 && !throttled; attempt++) {
      const error = await anonymous.auth.login({ email, password: 'wrong-password' }).catch((e: unknown) => e);
      if (error instanceof ApiError && error.status === 429) throttled = error;
    }
    expect(throttled).toMatchObject({ status: 429, code: 'throttled' });
    expect((throttled as ApiError).retryAfter).toBeGreaterThan(0);
  });

  it('uploads a document through the signed URL (embedded local storage) and confirms it', async () => {
    const { client, ws } = await chatOf(await newUser(app.t));
    const kb = await client.knowledgeBases.create(ws.id, { name: 'Policies' });
    const text = '# Refunds\n\nCustomers may ask for a refund within 30 days.\n';
    const document = await client.documents.upload(ws.id, { name: 'refunds.md', contentType: 'text/markdown', body: text, knowledgeBaseIds: [kb.id] });
    expect(document).toMatchObject({ name: 'refunds.md', size: Buffer.byteLength(text), knowledge_base_ids: [kb.id] });
    // Confirmed: its processing task exists (queued or already running, depending on the profile).
    const status = await client.documents.processingStatus(ws.id, document.id);
    expect(status.task).toMatchObject({ document: document.id });
    const { data: link } = await client.raw.GET('/api/workspaces/{ws}/documents/{id}/download-url/', {
      params: { path: { ws: ws.id, id: document.id } },
    });
    expect(await (await fetch(link!.url)).text()).toBe(text);
  });
});
