import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { newUser } from '../../../test/support/factories.js';
import { useListeningChatApp } from '../../../test/support/listening-app.js';
import { createClient, type StreamEvent } from '../src/index.js';

// Stream buffers kept 0.2 s after the end, so a reattach soon finds them gone.
const app = useListeningChatApp({ STREAM_BUFFER_TTL_SECONDS: '0.2' });

describe('reattaching with the SDK after the stream buffer expired', () => {
  it('yields the done rebuilt from the saved reply (no id), once', async () => {
    const user = await newUser(app.t);
    const client = createClient({ baseUrl: app.baseUrl, token: user.token });
    const ws = await client.workspaces.create({ name: 'Expiry' });
    const chat = await client.chats.create(ws.id, { name: 'Chat' });
    app.fake.enqueue({ text: 'All saved.', chunks: 2 });
    const stream = client.messages.stream(ws.id, chat.id, { content: 'Hi' });
    const done = await stream.finished();
    await sleep(600);

    const events: StreamEvent[] = [];
    for await (const event of client.messages.reattach(ws.id, chat.id, stream.streamId, '1')) events.push(event);
    expect(events).toEqual([{ event: 'done', id: undefined, data: done }]);
  });
});
