/** The stream benchmark's fake reply (bench/stream-client.ts, bench/stream-fake.ts): ~100 words, split into chunks by the fake. */
const BENCH_REPLY_TEXT = Array.from(
  { length: 20 },
  (_, i) => `Sentence ${i + 1} of the benchmark reply talks about streaming tokens.`,
).join(' ');

/** The fake's reply in `chunks` deltas, with the usage it reports. */
export const benchReply = (chunks: number) => ({ text: BENCH_REPLY_TEXT, chunks, usage: { inputTokens: 20, outputTokens: 100 } });
