import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BuiltCallSettings, ChatLanguageModel } from '../models/index.js';
import { agentFramework, type AgentEvent, ModelCallError } from './frameworks.js';
import { streamPlainText } from './model-stream.js';

type Part = Record<string, unknown> & { type: string };

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

const reply: Part[] = [
  { type: 'stream-start', warnings: [] },
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: 'Hel' },
  { type: 'text-delta', id: 't', delta: '' },
  { type: 'text-delta', id: 't', delta: 'lo.' },
  { type: 'text-end', id: 't' },
  { type: 'finish', usage: usage(12, 3), finishReason: { unified: 'stop', raw: 'stop' } },
];

/** A v3 model whose stream hands out `parts` one read at a time; `pulled` counts the reads, `cancelled` the cancels. */
function fakeModel(parts: Part[], options: { onPull?: (index: number) => void } = {}) {
  const state = { pulled: 0, cancelled: 0, calls: [] as unknown[] };
  const model = {
    specificationVersion: 'v3',
    provider: 'fake.chat',
    modelId: 'fake-model',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    doStream: (options_: unknown) => {
      state.calls.push(options_);
      let index = 0;
      const stream = new ReadableStream<Part>({
        pull(controller) {
          options.onPull?.(index);
          state.pulled++;
          if (index < parts.length) controller.enqueue(parts[index++]!);
          else controller.close();
        },
        cancel() {
          state.cancelled++;
        },
      });
      return Promise.resolve({ stream });
    },
  } as unknown as ChatLanguageModel;
  return { model, state };
}

const call: BuiltCallSettings = { settings: { maxOutputTokens: 100, temperature: 0.5 }, providerOptions: {}, dropped: [] };
const messages = [{ role: 'user' as const, content: 'hi' }];

afterEach(() => {
  vi.restoreAllMocks();
});

describe('streamPlainText: one model call read straight off the provider stream', () => {
  it('passes the text on as it comes, and returns it with the usage of the finish part', async () => {
    const { model, state } = fakeModel(reply);
    const texts: string[] = [];
    const result = await streamPlainText({ model, system: 'Be brief.', messages, call, abortSignal: new AbortController().signal, onText: (t) => texts.push(t) });
    expect(texts).toEqual(['Hel', 'lo.']);
    expect(result).toEqual({ text: 'Hello.', usage: { inputTokens: 12, outputTokens: 3 }, stopped: false });
    // The prompt as streamText would build it: the system message first, the call settings as given.
    const options = state.calls[0] as { prompt: Array<{ role: string }>; maxOutputTokens: number; temperature: number };
    expect(options.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(options).toMatchObject({ maxOutputTokens: 100, temperature: 0.5 });
  });

  it('an error part rejects with the provider error', async () => {
    const failure = new Error('overloaded');
    const { model, state } = fakeModel([...reply.slice(0, 3), { type: 'error', error: failure }, ...reply.slice(3)]);
    await expect(streamPlainText({ model, system: undefined, messages, call, abortSignal: new AbortController().signal, onText: () => undefined })).rejects.toBe(failure);
    // The rest of the body is let go.
    expect(state.cancelled).toBe(1);
  });

  it('an abort is a stop: what came before it, nothing after it, the body let go', async () => {
    const controller = new AbortController();
    const { model, state } = fakeModel(reply, { onPull: (index) => index === 4 && controller.abort() });
    const texts: string[] = [];
    const result = await streamPlainText({ model, system: undefined, messages, call, abortSignal: controller.signal, onText: (t) => texts.push(t) });
    expect(result).toEqual({ text: 'Hel', usage: null, stopped: true });
    expect(texts).toEqual(['Hel']);
    expect(state.cancelled).toBe(1);
  });

  it('a stop before the call is made is a stop, not a failure', async () => {
    const controller = new AbortController();
    controller.abort();
    const { model } = fakeModel(reply);
    const result = await streamPlainText({ model, system: undefined, messages, call, abortSignal: controller.signal, onText: () => undefined });
    expect(result).toMatchObject({ text: '', stopped: true });
  });
});

describe('a turn without tools adds no stream stage to the provider stream (memory per open stream, issue 14)', () => {
  it.each(['direct', 'tools'])('%s: no TransformStream, no tee; the reply and usage as before', async (name) => {
    const transforms = vi.fn();
    const tees = vi.fn();
    const Original = globalThis.TransformStream;
    vi.spyOn(globalThis, 'TransformStream').mockImplementation(function (this: unknown, ...args: ConstructorParameters<typeof TransformStream>) {
      transforms();
      return new Original(...args);
    } as unknown as typeof TransformStream);
    const tee = ReadableStream.prototype.tee;
    vi.spyOn(ReadableStream.prototype, 'tee').mockImplementation(function (this: ReadableStream) {
      tees();
      return tee.call(this) as [ReadableStream, ReadableStream];
    });
    const { model } = fakeModel(reply);
    const events: AgentEvent[] = [];
    const result = await agentFramework(name).run({
      model,
      system: undefined,
      messages,
      call,
      abortSignal: new AbortController().signal,
      query: 'hi',
      searchKnowledge: null,
      onEvent: (event) => events.push(event),
    });
    expect(result).toEqual({ text: 'Hello.', usage: { inputTokens: 12, outputTokens: 3 }, stopped: false, sources: [] });
    expect(events).toEqual([
      { type: 'delta', text: 'Hel' },
      { type: 'delta', text: 'lo.' },
    ]);
    expect(transforms).not.toHaveBeenCalled();
    expect(tees).not.toHaveBeenCalled();
  });

  it('a failing model is a ModelCallError carrying the provider error', async () => {
    const failure = new Error('boom');
    const { model } = fakeModel([{ type: 'error', error: failure }]);
    const error = await agentFramework('direct')
      .run({ model, system: undefined, messages, call, abortSignal: new AbortController().signal, query: '', searchKnowledge: null, onEvent: () => undefined })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelCallError);
    expect((error as ModelCallError).cause).toBe(failure);
  });
});
