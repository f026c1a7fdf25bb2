import { describe, expect, it } from 'vitest';
import { chunkDocument, countTokens, DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS, type DocumentChunk } from './chunk.js';
import { type ExtractedDocument, extractText } from './extract/index.js';

/**
 * Deterministic prose: numbered sentences of varying length, grouped into paragraphs. Every word
 * carries a running number, so no text repeats and overlaps can be located exactly.
 */
function prose(paragraphs: number, seed = 1, prefix = 'S'): string {
  const words = ['apple', 'river', 'quietly', 'engine', 'under', 'bright', 'the', 'of', 'tomorrow', 'system', 'garden', 'walks', 'blue', 'ledger', 'and', 'a'];
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  let n = 0;
  let w = 0;
  const out: string[] = [];
  for (let p = 0; p < paragraphs; p++) {
    const sentences: string[] = [];
    const count = 2 + Math.floor(next() * 6);
    for (let s = 0; s < count; s++) {
      const length = 4 + Math.floor(next() * 30);
      const body = Array.from({ length }, () => `${words[Math.floor(next() * words.length)]}${w++}`).join(' ');
      sentences.push(`${prefix}${n++} ${body}.`);
    }
    out.push(sentences.join(' '));
  }
  return out.join('\n\n');
}

const doc = (text: string, page: number | null = null): ExtractedDocument => ({ pages: [{ page, text }] });
const squash = (text: string) => text.replace(/\s+/g, '');

/** Characters at the start of `next` that repeat the end of `previous`. */
function overlapLength(previous: string, next: string): number {
  for (let k = Math.min(previous.length, next.length); k > 0; k--) {
    if (previous.endsWith(next.slice(0, k))) return k;
  }
  return 0;
}

/** The text the chunks cover, with each chunk's repeated overlap removed. */
function reconstruct(chunks: DocumentChunk[]): string {
  return chunks
    .map((chunk, i) => (i === 0 || chunks[i - 1]!.page !== chunk.page ? chunk.content : chunk.content.slice(overlapLength(chunks[i - 1]!.content, chunk.content))))
    .join(' ');
}

function expectWellFormed(chunks: DocumentChunk[], maxTokens: number): void {
  chunks.forEach((chunk, i) => {
    expect(chunk.index).toBe(i);
    expect(chunk.content.trim()).toBe(chunk.content);
    expect(chunk.content.length).toBeGreaterThan(0);
    expect(chunk.tokenCount).toBe(countTokens(chunk.content));
    expect(chunk.tokenCount).toBeLessThanOrEqual(maxTokens);
  });
}

describe('countTokens', () => {
  it('counts cl100k_base tokens', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('Hello, world! How are you today?')).toBe(9);
  });

  it('treats special-token strings in documents as plain text', () => {
    expect(() => countTokens('before <|endoftext|> after')).not.toThrow();
    expect(countTokens('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('stays fast on very long runs without spaces (counted in pieces)', () => {
    // Counted in one piece, 200,000 letters would take minutes (BPE is quadratic per run).
    const run = 'QUJDRE'.repeat(33_334);
    const count = countTokens(run);
    expect(count).toBeGreaterThan(run.length / 8);
    expect(count).toBeLessThan(run.length);
  });
});

describe('chunkDocument', () => {
  it('uses 500 tokens with a 60-token overlap by default', () => {
    expect(DEFAULT_MAX_TOKENS).toBe(500);
    expect(DEFAULT_OVERLAP_TOKENS).toBe(60);
    const text = prose(60);
    expect(countTokens(text)).toBeGreaterThan(2_000);
    const chunks = chunkDocument(doc(text));
    expect(chunks.length).toBeGreaterThan(4);
    expectWellFormed(chunks, 500);
    for (let i = 1; i < chunks.length; i++) {
      const overlap = chunks[i]!.content.slice(0, overlapLength(chunks[i - 1]!.content, chunks[i]!.content));
      expect(countTokens(overlap)).toBeGreaterThan(0);
      expect(countTokens(overlap)).toBeLessThanOrEqual(62);
    }
    // Most chunks are well filled.
    expect(chunks.slice(0, -1).every((chunk) => chunk.tokenCount > 250)).toBe(true);
  });

  it('never exceeds maxTokens and covers the whole text in order', () => {
    const text = prose(40, 7);
    for (const [maxTokens, overlapTokens] of [[8, 0], [20, 5], [64, 16], [128, 0], [300, 60], [1000, 200]] as const) {
      const chunks = chunkDocument(doc(text), { maxTokens, overlapTokens });
      expectWellFormed(chunks, maxTokens);
      expect(squash(reconstruct(chunks))).toBe(squash(text));
    }
  });

  it('carries an overlap from the end of the previous chunk', () => {
    const text = prose(30, 3);
    const chunks = chunkDocument(doc(text), { maxTokens: 120, overlapTokens: 30 });
    expect(chunks.length).toBeGreaterThan(5);
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1]!.content;
      const current = chunks[i]!.content;
      const shared = overlapLength(previous, current);
      expect(shared).toBeGreaterThan(0);
      expect(countTokens(current.slice(0, shared))).toBeLessThanOrEqual(32);
      // Something new follows the overlap.
      expect(current.length).toBeGreaterThan(shared);
    }
  });

  it('prefers whole sentences for the overlap', () => {
    const text = 'Alpha one two three. Beta four five six. Gamma seven eight nine. Delta ten eleven twelve. Epsilon thirteen fourteen.';
    // Five tokens per sentence: two sentences fit in 12 tokens, one in a 6-token overlap.
    const chunks = chunkDocument(doc(text), { maxTokens: 12, overlapTokens: 6 });
    expect(chunks.map((c) => c.content)).toEqual([
      'Alpha one two three. Beta four five six.',
      'Beta four five six. Gamma seven eight nine.',
      'Gamma seven eight nine. Delta ten eleven twelve.',
      'Delta ten eleven twelve. Epsilon thirteen fourteen.',
    ]);
  });

  it('produces no overlap when overlapTokens is 0', () => {
    const text = prose(20, 5);
    const chunks = chunkDocument(doc(text), { maxTokens: 100, overlapTokens: 0 });
    expect(squash(chunks.map((c) => c.content).join(''))).toBe(squash(text));
  });

  it('keeps page numbers and never spans or overlaps across pages', () => {
    const pages = [
      { page: 1, text: prose(6, 11, 'A') },
      { page: 2, text: 'Short second page.' },
      { page: 3, text: '' },
      { page: 4, text: prose(8, 12, 'B') },
    ];
    const chunks = chunkDocument({ pages }, { maxTokens: 80, overlapTokens: 20 });
    expectWellFormed(chunks, 80);
    expect([...new Set(chunks.map((c) => c.page))]).toEqual([1, 2, 4]);
    expect(chunks.filter((c) => c.page === 2).map((c) => c.content)).toEqual(['Short second page.']);
    for (const chunk of chunks) {
      const source = pages.find((p) => p.page === chunk.page)!.text;
      expect(squash(source)).toContain(squash(chunk.content));
    }
    const firstOfPage4 = chunks.find((c) => c.page === 4)!;
    expect(firstOfPage4.content.startsWith('B0 ')).toBe(true);
    for (const page of [1, 4]) {
      const own = chunks.filter((c) => c.page === page);
      expect(squash(reconstruct(own))).toBe(squash(pages.find((p) => p.page === page)!.text));
    }
  });

  it('splits a single sentence longer than maxTokens at spaces', () => {
    const sentence = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    const chunks = chunkDocument(doc(sentence), { maxTokens: 50, overlapTokens: 10 });
    expect(chunks.length).toBeGreaterThan(10);
    expectWellFormed(chunks, 50);
    expect(squash(reconstruct(chunks))).toBe(squash(sentence));
    // Words are never cut.
    for (const chunk of chunks) for (const word of chunk.content.split(' ')) expect(word).toMatch(/^word\d+$/);
  });

  it('splits a run without spaces (a URL, base64, unspaced script) by characters', () => {
    const blob = Buffer.from(Array.from({ length: 6_000 }, (_, i) => (i * 7919) % 256)).toString('base64');
    const chunks = chunkDocument(doc(`Intro sentence. ${blob} Outro sentence.`), { maxTokens: 100, overlapTokens: 0 });
    expectWellFormed(chunks, 100);
    expect(chunks.map((c) => c.content).join('').replace(/\s+/g, '')).toBe(squash(`Intro sentence. ${blob} Outro sentence.`));
    const japanese = '日本語の文章は単語の間に空白を入れずに書かれることが多いです'.repeat(40);
    const cjk = chunkDocument(doc(japanese), { maxTokens: 64, overlapTokens: 0 });
    expectWellFormed(cjk, 64);
    expect(cjk.map((c) => c.content).join('')).toBe(japanese);
  });

  it('never cuts a character in two', () => {
    const emoji = '😀🎉👍🏽'.repeat(300);
    const chunks = chunkDocument(doc(emoji), { maxTokens: 32, overlapTokens: 8 });
    expectWellFormed(chunks, 32);
    for (const chunk of chunks) expect(chunk.content).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it('keeps short lines (CSV rows) whole', () => {
    const rows = ['sku,name,quantity', ...Array.from({ length: 200 }, (_, i) => `A-${i},Item number ${i},${i * 3}`)];
    const chunks = chunkDocument(doc(rows.join('\n')), { maxTokens: 60, overlapTokens: 12 });
    expectWellFormed(chunks, 60);
    const known = new Set(rows);
    for (const chunk of chunks) for (const line of chunk.content.split('\n')) expect(known.has(line)).toBe(true);
  });

  it('is deterministic', () => {
    const input: ExtractedDocument = { pages: [{ page: 1, text: prose(15, 21) }, { page: 2, text: prose(9, 22) }] };
    const first = chunkDocument(input, { maxTokens: 90, overlapTokens: 15 });
    const second = chunkDocument(structuredClone(input), { maxTokens: 90, overlapTokens: 15 });
    expect(second).toEqual(first);
  });

  it('makes one chunk of a tiny document and none of an empty one', () => {
    expect(chunkDocument(doc('  Just a note.  '))).toEqual([{ index: 0, content: 'Just a note.', tokenCount: 4, page: null }]);
    expect(chunkDocument(doc('Hello', 7))).toEqual([{ index: 0, content: 'Hello', tokenCount: 1, page: 7 }]);
    expect(chunkDocument({ pages: [] })).toEqual([]);
    expect(chunkDocument(doc(''))).toEqual([]);
    expect(chunkDocument({ pages: [{ page: 1, text: ' \n\n \t ' }, { page: 2, text: '\u0000' }] })).toEqual([]);
  });

  it('drops NUL characters and keeps paragraph breaks inside chunks', () => {
    const [chunk] = chunkDocument(doc('First\u0000 paragraph.\r\n\r\nSecond paragraph.\nSame paragraph.'));
    expect(chunk!.content).toBe('First paragraph.\n\nSecond paragraph.\nSame paragraph.');
  });

  it('rejects invalid options', () => {
    expect(() => chunkDocument(doc('x'), { maxTokens: 4 })).toThrow(RangeError);
    expect(() => chunkDocument(doc('x'), { maxTokens: 100.5 })).toThrow(RangeError);
    expect(() => chunkDocument(doc('x'), { maxTokens: 100, overlapTokens: 100 })).toThrow(RangeError);
    expect(() => chunkDocument(doc('x'), { overlapTokens: -1 })).toThrow(RangeError);
  });
});

describe('CSV rows', () => {
  it('a CSV row is never split across chunks or in the overlap, unless it alone exceeds a chunk', async () => {
    // Rows with sentence breaks inside (which split prose), one with a quoted line break, one too long for a chunk.
    const rows = ['id,note,amount', ...Array.from({ length: 120 }, (_, i) => `${i},"Shipped on day ${i}. Customer asked for a refund! Ticket closed.",${i * 3}`)];
    rows.splice(40, 0, '999,"A note over\r\ntwo lines. Still one row.",5');
    const long = `1000,"${Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ')}",1`;
    const extracted = await extractText({ bytes: Buffer.from([...rows, long, '1001,"Last row.",2'].join('\r\n')), contentType: 'text/csv' });
    expect(extracted.pages[0]!.text).toContain('999,"A note over two lines. Still one row.",5');
    const chunks = chunkDocument(extracted, { maxTokens: 80, overlapTokens: 30 });
    expectWellFormed(chunks, 80);
    const whole = new Set([...rows.map((row) => row.replace('\r\n', ' ')), '1001,"Last row.",2']);
    const seen = new Map<string, number>();
    for (const chunk of chunks) {
      for (const line of chunk.content.split('\n')) {
        // The oversized row alone is cut (at spaces); every other line is a whole row.
        if (line.includes('word')) expect(long).toContain(line);
        else expect(whole.has(line), line).toBe(true);
        seen.set(line, (seen.get(line) ?? 0) + 1);
      }
    }
    expect([...whole].every((row) => seen.has(row))).toBe(true);
    // The overlap is whole rows: some rows start one chunk after ending the previous one.
    expect([...seen.values()].some((n) => n > 1)).toBe(true);
  });

  it('a line break inside a quoted field joins the record; an unclosed quote leaves the lines alone', async () => {
    const read = async (csv: string) => (await extractText({ bytes: Buffer.from(csv), contentType: 'text/csv' })).pages[0]!;
    expect(await read('a,b\n1,"x\ny ""q""\nz",2\n3;"k\nl"\n4,5 "inch\n6,7')).toEqual({
      page: null,
      text: 'a,b\n1,"x y ""q"" z",2\n3;"k l"\n4,5 "inch\n6,7',
      keepLines: true,
    });
    expect((await read('a,b\n1,"never closed\n2,3\n4,5')).text).toBe('a,b\n1,"never closed\n2,3\n4,5');
  });
});

