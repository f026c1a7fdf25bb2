import type { ModelMessage } from 'ai';
import type { BuiltCallSettings, ChatLanguageModel } from '../models/index.js';
import { once } from '../../platform/once.js';

/** What a model run produced; `usage` is null when the call ended before the provider said (a stop). */
export interface StreamedText {
  text: string;
  usage: { inputTokens: number; outputTokens: number } | null;
  stopped: boolean;
}

export interface PlainStreamInput {
  model: ChatLanguageModel;
  system: string | undefined;
  messages: ModelMessage[];
  call: BuiltCallSettings;
  abortSignal: AbortSignal;
  onText: (text: string) => void;
}

/** The AI SDK's building blocks, loaded at the first model call, not at start-up (models/providers.ts says why). */
const aiInternal = once(() => import('ai/internal'));

/** Same retry policy as the `streamText` calls: one retry of a retryable request failure. */
const MAX_RETRIES = 1;

/** Whether `streamPlainText` can run this model (AI SDK v3 model objects: every provider client here). */
export const supportsPlainStream = (model: ChatLanguageModel): boolean => model.specificationVersion === 'v3';

/**
 * One model call without tools, read by one reader straight off the provider's stream.
 *
 * `streamText` wraps a provider stream in ~25 more web-stream stages per call (its stitchable
 * stream, the stop, output and event-processor transforms, the tool-results merge, a step
 * transform, then a `tee` for every `fullStream` read, whose other branch keeps every part), which
 * is most of the memory of an open stream and much of its CPU (docs/decisions.md, "Hot paths").
 * A plain chat turn needs none of them: this uses the same building blocks `streamText` runs before
 * the request (prompt standardisation and conversion, call-settings validation, retries) and the
 * same usage mapping, and reads the provider's parts itself. Tool loops keep `streamText`.
 *
 * Errors: a request that fails (after the retry), a broken stream or an `error` part rejects with
 * the provider's error (the caller wraps it in ModelCallError, as it does streamText's `error`
 * parts), unless the signal was aborted, which is a stop (`stopped: true`, whatever was produced).
 */
export async function streamPlainText(input: PlainStreamInput): Promise<StreamedText> {
  const { model, abortSignal } = input;
  if (model.specificationVersion !== 'v3') throw new TypeError('streamPlainText needs a v3 language model');
  let text = '';
  let usage: StreamedText['usage'] = null;
  const result = (stopped: boolean): StreamedText => ({ text, usage, stopped: stopped || abortSignal.aborted });

  let reader: ReadableStreamDefaultReader<unknown> | undefined;
  const { asLanguageModelUsage, convertToLanguageModelPrompt, prepareCallSettings, prepareRetries, standardizePrompt } = await aiInternal();
  try {
    // Our messages are built by us (turn.run.ts): streamText's check of them against the
    // ModelMessage schema (a zod parse of the whole history, schema built per call) is skipped.
    const prompt = input.messages.length ? { system: input.system, messages: input.messages } : await standardizePrompt({ system: input.system, messages: input.messages });
    const promptMessages = await convertToLanguageModelPrompt({
      prompt,
      supportedUrls: await model.supportedUrls,
      download: undefined,
      abortSignal,
    });
    const settings = prepareCallSettings(input.call.settings);
    const { retry } = prepareRetries({ maxRetries: MAX_RETRIES, abortSignal });
    const { stream } = await retry(() =>
      model.doStream({
        ...settings,
        prompt: promptMessages,
        providerOptions: input.call.providerOptions,
        abortSignal,
        includeRawChunks: false,
      }),
    );
    const partReader = stream.getReader();
    reader = partReader as ReadableStreamDefaultReader<unknown>;
    for (;;) {
      const { done, value: part } = await partReader.read();
      if (done) break;
      // As streamText: once stopped, no part after the abort reaches the caller.
      if (abortSignal.aborted) return result(true);
      switch (part.type) {
        case 'text-delta':
          if (part.delta) {
            text += part.delta;
            input.onText(part.delta);
          }
          break;
        case 'finish': {
          const total = asLanguageModelUsage(part.usage);
          usage = { inputTokens: total.inputTokens ?? 0, outputTokens: total.outputTokens ?? 0 };
          break;
        }
        case 'error':
          throw part.error;
        default:
          break;
      }
    }
    reader = undefined;
    return result(false);
  } catch (error) {
    if (abortSignal.aborted) return result(true);
    throw error;
  } finally {
    // Left early (a stop or an error part): let go of the response body.
    if (reader) void reader.cancel().catch(() => undefined);
  }
}
