import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countTokens, fakeEmbedding, type FakeModelServer, splitText, startFakeModelServer } from './fake-model-server.js';

/*
 * The fake server at the protocol level (plain fetch). The AI SDK's own clients talking to it are
 * tested in src/modules/models/*.test.ts.
 */

let fake: FakeModelServer;

beforeAll(async () => {
  fake = await startFakeModelServer();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.reset();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- wire bodies are indexed freely
type Json = any;
const json = (res: Response): Promise<Json> => res.json();

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${fake.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

interface Frame {
  event?: string;
  data: string;
}

function parseSse(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines.find((l) => l.startsWith('data: '))!.slice(6);
      return event ? { event, data } : { data };
    });
}

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'gpt-4.1',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content },
  ],
  ...extra,
});

describe('OpenAI Chat Completions', () => {
  it('echoes the last user message with deterministic usage and records the request', async () => {
    const res = await post('/v1/chat/completions', chat('hello fake world'), { authorization: 'Bearer sk-test' });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'Echo: hello fake world' }, finish_reason: 'stop' });
    // input: "be brief hello fake world" = 5 words; output: "Echo: hello fake world" = 4 words
    expect(body.usage).toEqual({ prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({
      api: 'openai.chat',
      method: 'POST',
      path: '/v1/chat/completions',
      model: 'gpt-4.1',
      stream: false,
      lastUserText: 'hello fake world',
      aborted: false,
      body: { model: 'gpt-4.1' },
    });
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer sk-test');
  });

  it('streams the scripted text in N chunks and a final usage chunk when include_usage is set', async () => {
    fake.enqueue({ text: 'abcdefgh', chunks: 4, usage: { inputTokens: 11, outputTokens: 7 } });
    const res = await post('/v1/chat/completions', chat('hi', { stream: true, stream_options: { include_usage: true } }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const frames = parseSse(await res.text());
    expect(frames.at(-1)!.data).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data));
    const texts = chunks.flatMap((c) => c.choices.map((ch: { delta: { content?: string } }) => ch.delta.content)).filter(Boolean);
    expect(texts).toEqual(['ab', 'cd', 'ef', 'gh']);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } });
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
  });

  it('sends no usage chunk without include_usage', async () => {
    const res = await post('/v1/chat/completions', chat('hi', { stream: true }));
    const chunks = parseSse(await res.text()).slice(0, -1).map((f) => JSON.parse(f.data));
    expect(chunks.some((c) => c.usage)).toBe(false);
  });

  it('streams tool calls with their arguments and finish_reason tool_calls', async () => {
    fake.enqueue({ toolCalls: [{ id: 'call_1', name: 'lookup', args: { q: 'x' } }] });
    const res = await post('/v1/chat/completions', chat('hi', { stream: true }));
    const chunks = parseSse(await res.text()).slice(0, -1).map((f) => JSON.parse(f.data));
    const calls = chunks.flatMap((c) => c.choices.flatMap((ch: { delta: { tool_calls?: unknown[] } }) => ch.delta.tool_calls ?? []));
    expect(calls[0]).toMatchObject({ index: 0, id: 'call_1', function: { name: 'lookup' } });
    expect(calls.map((c: { function: { arguments: string } }) => c.function.arguments).join('')).toBe('{"q":"x"}');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');
  });

  it('answers a scripted HTTP error with the API error body and headers', async () => {
    fake.enqueue({ status: 429, errorMessage: 'slow down', headers: { 'retry-after': '7' } });
    const res = await post('/v1/chat/completions', chat('hi'));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await json(res)).toEqual({ error: { message: 'slow down', type: 'rate_limit_exceeded', code: null } });
  });

  it('fails mid-stream with an error event', async () => {
    fake.enqueue({ text: 'abcdef', chunks: 3, failAfterChunks: 1, failMode: 'error-event' });
    const res = await post('/v1/chat/completions', chat('hi', { stream: true }));
    const frames = parseSse(await res.text());
    expect(frames.map((f) => JSON.parse(f.data)).at(-1)).toEqual({ error: { message: 'The fake model failed.', type: 'server_error', code: null } });
    expect(frames.filter((f) => f.data.includes('"content":"ab"'))).toHaveLength(1);
    expect(frames.some((f) => f.data.includes('"content":"cd"'))).toBe(false);
  });

  it('fails mid-stream by cutting the connection', async () => {
    fake.enqueue({ text: 'abcdef', chunks: 3, failAfterChunks: 2 });
    const res = await post('/v1/chat/completions', chat('hi', { stream: true }));
    await expect(res.text()).rejects.toThrow();
    expect(fake.requests[0]!.aborted).toBe(false); // the server cut it, the client did not abort
  });

  it('paces chunks in slow mode and notices a client abort', async () => {
    fake.enqueue({ text: 'abcdefghij', chunks: 10, delayMs: 40 });
    const controller = new AbortController();
    const res = await fetch(`${fake.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('hi', { stream: true })),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let received = '';
    while (!received.includes('"content":"a"')) received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await expect(reader.read()).rejects.toThrow();
    await expect.poll(() => fake.requests[0]!.aborted, { timeout: 5000 }).toBe(true);
  });

  it('takes scripted replies in order, accepts functions, then falls back to the echo', async () => {
    fake.enqueue({ text: 'first' }, (request) => ({ text: `second for ${request.lastUserText}` }));
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = await json(await post('/v1/chat/completions', chat(`q${i}`)));
      texts.push(body.choices[0].message.content);
    }
    expect(texts).toEqual(['first', 'second for q1', 'Echo: q2']);
  });

  it('script() replaces the queue and reset() clears it with the recorded requests', async () => {
    fake.enqueue({ text: 'dropped' });
    fake.script({ chat: [{ text: 'scripted' }] });
    const body = await json(await post('/v1/chat/completions', chat('x')));
    expect(body.choices[0].message.content).toBe('scripted');
    fake.enqueue({ text: 'also dropped' });
    fake.reset();
    expect(fake.requests).toHaveLength(0);
    const again = await json(await post('/v1/chat/completions', chat('y')));
    expect(again.choices[0].message.content).toBe('Echo: y');
  });
});

describe('Anthropic Messages', () => {
  it('streams message_start, text deltas, message_delta with usage and message_stop', async () => {
    fake.enqueue({ text: 'hello there', chunks: 2, usage: { inputTokens: 9, outputTokens: 4 } });
    const res = await post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const frames = parseSse(await res.text());
    expect(frames.map((f) => f.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(JSON.parse(frames[0]!.data).message.usage.input_tokens).toBe(9);
    expect(JSON.parse(frames[5]!.data)).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4 } });
  });

  it('answers without streaming, with tool_use blocks', async () => {
    fake.enqueue({ text: 'let me look', toolCalls: [{ id: 'toolu_1', name: 'lookup', args: { q: 'x' } }] });
    const res = await post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
    expect(await json(res)).toMatchObject({
      type: 'message',
      content: [
        { type: 'text', text: 'let me look' },
        { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } },
      ],
      stop_reason: 'tool_use',
    });
    expect(fake.requests[0]!.lastUserText).toBe('hi');
  });

  it('uses the Anthropic error shapes', async () => {
    fake.enqueue({ status: 529, errorMessage: 'busy' });
    const res = await post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] });
    expect(res.status).toBe(529);
    expect(await json(res)).toEqual({ type: 'error', error: { type: 'api_error', message: 'busy' } });
    fake.enqueue({ text: 'abcd', chunks: 2, failAfterChunks: 1, failMode: 'error-event' });
    const stream = await post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 10, stream: true, messages: [] });
    expect(parseSse(await stream.text()).at(-1)).toMatchObject({ event: 'error' });
  });
});

describe('Google Gemini', () => {
  it('routes streamGenerateContent?alt=sse with the model from the path and usageMetadata last', async () => {
    fake.enqueue({ text: 'abcd', chunks: 2, usage: { inputTokens: 3, outputTokens: 2 } });
    const res = await post('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    const chunks = parseSse(await res.text()).map((f) => JSON.parse(f.data));
    expect(chunks.slice(0, 2).map((c) => c.candidates[0].content.parts[0].text)).toEqual(['ab', 'cd']);
    expect(chunks.at(-1)).toMatchObject({ candidates: [{ finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 } });
    expect(fake.requests[0]).toMatchObject({ api: 'google.generate', model: 'gemini-2.5-flash', stream: true, query: { alt: 'sse' }, lastUserText: 'hi' });
  });

  it('answers generateContent with function calls', async () => {
    fake.enqueue({ toolCalls: [{ name: 'lookup', args: { q: 'x' } }] });
    const res = await post('/v1beta/models/gemini-2.5-pro:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    expect((await json(res)).candidates[0].content.parts).toEqual([{ functionCall: { name: 'lookup', args: { q: 'x' } } }]);
  });
});

describe('embeddings', () => {
  it('returns deterministic unit vectors of the requested or native size, with usage', async () => {
    const res = await post('/v1/embeddings', { model: 'text-embedding-3-small', input: ['red apples', 'green apples'], encoding_format: 'float' });
    const body = await json(res);
    expect(body.data).toHaveLength(2);
    expect(body.data[0].embedding).toHaveLength(1536);
    expect(body.data[0].embedding).toEqual(fakeEmbedding('red apples', 1536));
    expect(body.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 });
    const sized = await json(await post('/v1/embeddings', { model: 'anything', input: 'x', dimensions: 8 }));
    expect(sized.data[0].embedding).toHaveLength(8);
  });

  it('makes texts that share words closer than texts that do not', () => {
    const cosine = (a: number[], b: number[]) => a.reduce((sum, v, i) => sum + v * b[i]!, 0);
    const query = fakeEmbedding('how do I reset my password', 256);
    const near = fakeEmbedding('To reset your password open settings', 256);
    const far = fakeEmbedding('Quarterly revenue grew in Europe', 256);
    expect(Math.hypot(...query)).toBeCloseTo(1, 10);
    expect(cosine(query, near)).toBeGreaterThan(cosine(query, far));
  });

  it('speaks Gemini batchEmbedContents and embedContent', async () => {
    const batch = await post('/v1beta/models/gemini-embedding-001:batchEmbedContents', {
      requests: [{ model: 'models/gemini-embedding-001', content: { parts: [{ text: 'a' }] }, outputDimensionality: 16 }],
    });
    expect((await json(batch)).embeddings[0].values).toEqual(fakeEmbedding('a', 16));
    const single = await post('/v1beta/models/gemini-embedding-001:embedContent', { content: { parts: [{ text: 'b' }] } });
    expect((await json(single)).embedding.values).toHaveLength(3072);
  });

  it('can fail on demand', async () => {
    fake.enqueueEmbeddings({ status: 503 });
    expect((await post('/v1/embeddings', { model: 'm', input: ['x'] })).status).toBe(503);
  });
});

describe('audio transcriptions', () => {
  const form = (format?: string) => {
    const data = new FormData();
    data.append('model', 'whisper-1');
    data.append('file', new File([new Uint8Array(64_000)], 'audio.wav', { type: 'audio/wav' }), 'audio.wav');
    if (format) data.append('response_format', format);
    data.append('timestamp_granularities[]', 'segment');
    return data;
  };

  it('records multipart fields and files and answers verbose_json with language and duration', async () => {
    fake.enqueueTranscription({ text: 'hello from audio' });
    const res = await fetch(`${fake.url}/v1/audio/transcriptions`, { method: 'POST', body: form('verbose_json') });
    expect(await json(res)).toMatchObject({ text: 'hello from audio', language: 'english', duration: 2, segments: [{ start: 0, end: 2 }] });
    expect(fake.requests[0]).toMatchObject({
      api: 'openai.transcriptions',
      body: {
        fields: { model: 'whisper-1', response_format: 'verbose_json', 'timestamp_granularities[]': 'segment' },
        files: [{ field: 'file', filename: 'audio.wav', contentType: 'audio/wav', size: 64_000 }],
      },
    });
  });

  it('answers only {text} for other formats', async () => {
    const res = await fetch(`${fake.url}/v1/audio/transcriptions`, { method: 'POST', body: form() });
    expect(await json(res)).toEqual({ text: 'This is a fake transcript.' });
  });
});

describe('server', () => {
  it('answers unknown routes with 404 and records them', async () => {
    const res = await post('/v1/unknown', {});
    expect(res.status).toBe(404);
    expect(fake.requestsTo('unknown')).toHaveLength(1);
  });

  it('waitForRequests resolves once enough requests arrived', async () => {
    const waiting = fake.waitForRequests(2, 2000);
    await post('/v1/chat/completions', chat('a'));
    await post('/v1/chat/completions', chat('b'));
    expect((await waiting).map((r) => r.lastUserText)).toEqual(['a', 'b']);
  });

  it('closes promptly with a slow stream in flight', async () => {
    const other = await startFakeModelServer();
    other.enqueue({ text: 'abcdefghij', chunks: 10, delayMs: 5000 });
    const res = await fetch(`${other.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('hi', { stream: true })),
    });
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(3000);
    await expect(res.text()).rejects.toThrow();
  });

  it('splits text and counts tokens deterministically', () => {
    expect(splitText('abcdefg', 3)).toEqual(['abc', 'def', 'g']);
    expect(splitText('ab', 5)).toEqual(['a', 'b']);
    expect(splitText('', 3)).toEqual([]);
    expect(countTokens('  one two\nthree ')).toBe(3);
  });
});
