/**
 * Token-aware chunking of extracted documents. Pure and deterministic; see README.md in this
 * folder for the decisions (encoding, page handling, overlap).
 */
import { countTokens as countWithEncoding } from 'gpt-tokenizer/encoding/cl100k_base';
import type { ExtractedDocument } from './extract/index.js';

/** The tokenizer encoding used for every count (OpenAI's embedding models use it too). */
export const TOKEN_ENCODING = 'cl100k_base';
export const DEFAULT_MAX_TOKENS = 500;
export const DEFAULT_OVERLAP_TOKENS = 60;
/** Smallest accepted maxTokens: a single character can take up to four tokens. */
export const MIN_MAX_TOKENS = 8;

export interface ChunkOptions {
  maxTokens?: number;
  overlapTokens?: number;
}

export interface DocumentChunk {
  /** 0-based position in the document. */
  index: number;
  content: string;
  /** Token count of `content` as countTokens() measures it; never above maxTokens. */
  tokenCount: number;
  /** The page the chunk comes from (chunks never span pages); null for formats without pages. */
  page: number | null;
}

const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Runs of non-space characters longer than this are counted in pieces of this size: byte-pair
 * encoding is quadratic in the length of such a run (100,000 letters without a space take half a
 * minute), so pathological input (base64, minified data, unspaced text) stays linear.
 */
export const LONG_RUN_CHARS = 256;
const LONG_RUN = new RegExp(`\\S{${LONG_RUN_CHARS + 1},}`);
const LONG_RUNS = new RegExp(LONG_RUN.source, 'g');

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Counts tokens with the cl100k_base encoding. Special-token strings such as `<|endoftext|>`
 * inside documents are counted as ordinary text (the library would otherwise throw). Exact,
 * except inside runs of more than LONG_RUN_CHARS non-space characters, which are counted piece
 * by piece (a close over-estimate).
 */
export function countTokens(text: string): number {
  if (text.length <= LONG_RUN_CHARS || !LONG_RUN.test(text)) return countWithEncoding(text, PLAIN_TEXT);
  let total = 0;
  let last = 0;
  for (const match of text.matchAll(LONG_RUNS)) {
    const start = match.index;
    if (start > last) total += countWithEncoding(text.slice(last, start), PLAIN_TEXT);
    const end = start + match[0].length;
    for (let at = start; at < end; ) {
      let stop = Math.min(at + LONG_RUN_CHARS, end);
      if (stop < end && isHighSurrogate(text.charCodeAt(stop - 1))) stop -= 1;
      total += countWithEncoding(text.slice(at, stop), PLAIN_TEXT);
      at = stop;
    }
    last = end;
  }
  if (last < text.length) total += countWithEncoding(text.slice(last), PLAIN_TEXT);
  return total;
}

/**
 * A piece of text that is never split further (a sentence, a word of an oversized sentence, or
 * a token-bounded slice of an oversized word), with the separator that precedes it in the
 * original text when it is not the first piece of a chunk.
 */
interface Atom {
  text: string;
  tokens: number;
  sep: '\n\n' | '\n' | ' ' | '';
}

/** Sentence ends: . ! ? … (with closing quotes or brackets) before whitespace, or CJK ends. */
const SENTENCE_BREAK = /(?<=[.!?…]["'”’)\]]*)\s+(?=\S)|(?<=[。！？])(?=\S)/u;

function separatorCost(sep: Atom['sep']): number {
  return sep === '\n\n' || sep === '\n' ? 1 : 0;
}

/** Cuts `text` to at most `length` UTF-16 units without splitting a surrogate pair. */
function prefix(text: string, length: number): string {
  let end = Math.min(length, text.length);
  if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  if (end === 0) end = Math.min(2, text.length); // a lone pair: keep it whole
  return text.slice(0, end);
}

/**
 * Splits a string with no usable break points (a long URL, base64, unspaced script) into pieces
 * of at most `max` tokens. Pieces are cut by characters and measured, so no character is ever
 * split (slicing token arrays could cut a multi-byte character in two).
 */
function splitByTokens(text: string, max: number, total: number): string[] {
  const pieces: string[] = [];
  const charsPerToken = text.length / Math.max(total, 1);
  let rest = text;
  while (rest.length > 0) {
    let length = Math.max(1, Math.floor(max * charsPerToken));
    let piece = prefix(rest, length);
    let tokens = countTokens(piece);
    while (tokens > max && piece.length > 1) {
      length = Math.max(1, Math.min(piece.length - 1, Math.floor(piece.length * (max / tokens) * 0.95)));
      const shorter = prefix(rest, length);
      if (shorter.length >= piece.length) break; // one character (at most 4 tokens) cannot shrink
      piece = shorter;
      tokens = countTokens(piece);
    }
    pieces.push(piece);
    rest = rest.slice(piece.length);
  }
  return pieces;
}

/**
 * The atoms of one page: paragraphs → lines → sentences, oversized sentences → words → slices.
 * With `keepLines` (spreadsheet rows) a line that fits in a chunk is one atom.
 */
function atomize(text: string, max: number, keepLines = false): Atom[] {
  const atoms: Atom[] = [];
  const push = (piece: string, pieceSep: Atom['sep']) => {
    const tokens = countTokens(piece);
    if (tokens <= max) {
      atoms.push({ text: piece, tokens, sep: pieceSep });
      return;
    }
    const words = piece.split(' ');
    if (words.length > 1) {
      words.forEach((word, i) => push(word, i === 0 ? pieceSep : ' '));
      return;
    }
    splitByTokens(piece, max, tokens).forEach((slice, i) => {
      atoms.push({ text: slice, tokens: countTokens(slice), sep: i === 0 ? pieceSep : '' });
    });
  };
  for (const paragraph of text.split(/\n[ \t]*\n\s*/)) {
    // What separates the next sentence from the previous atom: a paragraph break before the
    // paragraph's first sentence, a line break before a later line's first, else a space.
    let sep: Atom['sep'] = '\n\n';
    for (const rawLine of paragraph.split('\n')) {
      const line = rawLine.replace(/\s+/g, ' ').trim();
      if (!line) continue;
      if (sep === ' ') sep = '\n';
      if (keepLines) {
        const tokens = countTokens(line);
        if (tokens <= max) {
          atoms.push({ text: line, tokens, sep: atoms.length > 0 ? sep : '' });
          sep = ' ';
          continue;
        }
      }
      for (const sentence of line.split(SENTENCE_BREAK)) {
        const trimmed = sentence.trim();
        if (!trimmed) continue;
        push(trimmed, atoms.length > 0 ? sep : '');
        sep = ' ';
      }
    }
  }
  return atoms;
}

function join(atoms: readonly Atom[]): string {
  let out = '';
  atoms.forEach((atom, i) => {
    out += (i === 0 ? '' : atom.sep) + atom.text;
  });
  return out;
}

/** The last ≤ `limit` tokens of `text`, starting at a word boundary when one is near. */
function tokenTail(text: string, limit: number): string {
  const total = countTokens(text);
  if (total <= limit) return text;
  let length = Math.max(1, Math.floor(text.length * (limit / total)));
  let tail = '';
  for (;;) {
    let start = text.length - length;
    const code = text.charCodeAt(start);
    if (code >= 0xdc00 && code <= 0xdfff) start += 1; // do not start inside a surrogate pair
    tail = text.slice(start);
    const tokens = countTokens(tail);
    if (tokens <= limit || tail.length <= 1) break;
    length = Math.max(1, Math.min(tail.length - 1, Math.floor(tail.length * (limit / tokens) * 0.95)));
  }
  const start = text.length - tail.length;
  if (start > 0 && !/\s/.test(text[start - 1] ?? '')) {
    const space = tail.search(/\s/);
    if (space >= 0 && space < tail.length / 2) tail = tail.slice(space + 1);
  }
  return tail.trim();
}

/** The trailing whole atoms of `atoms` that fit in `limit` tokens (separators counted). */
function trailingAtoms(atoms: readonly Atom[], limit: number): Atom[] {
  const kept: Atom[] = [];
  let used = 0;
  for (let i = atoms.length - 1; i >= 0; i--) {
    const atom = atoms[i]!;
    const cost = atom.tokens + (kept.length > 0 ? separatorCost(kept[0]!.sep) : 0);
    if (used + cost > limit) break;
    kept.unshift(atom);
    used += cost;
  }
  return kept;
}

/**
 * The overlap carried into the next chunk: the trailing whole atoms of the chunk that fit in
 * `limit` tokens, or, when even the last atom is bigger, the token tail of that atom.
 */
function overlapAtoms(chunk: readonly Atom[], limit: number, wholeOnly = false): Atom[] {
  if (limit <= 0 || chunk.length === 0) return [];
  const carried = trailingAtoms(chunk, limit);
  if (carried.length === chunk.length) carried.shift(); // never repeat a whole chunk
  if (carried.length > 0 || wholeOnly) return carried;
  const last = chunk[chunk.length - 1]!;
  const tail = tokenTail(last.text, limit);
  return tail && tail !== last.text ? [{ text: tail, tokens: countTokens(tail), sep: last.sep }] : [];
}

function chunkPage(text: string, page: number | null, max: number, overlap: number, out: DocumentChunk[], keepLines = false): void {
  const atoms = atomize(text, max, keepLines);
  let next = 0;
  let carried: Atom[] = [];
  while (next < atoms.length) {
    const chunk: Atom[] = [...carried];
    let estimate = carried.reduce((sum, atom, i) => sum + atom.tokens + (i > 0 ? separatorCost(atom.sep) : 0), 0);
    let firstNew = chunk.length;
    while (next < atoms.length) {
      const atom = atoms[next]!;
      let cost = atom.tokens + (chunk.length > 0 ? separatorCost(atom.sep) : 0);
      if (estimate + cost > max) {
        if (chunk.length > firstNew) break;
        // The first new atom does not fit after the overlap: shorten the overlap to the room
        // left (none when the atom alone nearly fills a chunk).
        const room = max - atom.tokens - 1;
        const tail = room <= 0 ? '' : keepLines ? join(trailingAtoms(chunk, room)) : tokenTail(join(chunk), room);
        chunk.length = 0;
        firstNew = 0;
        estimate = 0;
        if (tail) {
          const tokens = countTokens(tail);
          chunk.push({ text: tail, tokens, sep: '' });
          firstNew = 1;
          estimate = tokens;
        }
        cost = atom.tokens + (chunk.length > 0 ? separatorCost(atom.sep) : 0);
      }
      chunk.push(atom);
      estimate += cost;
      next++;
    }
    // The estimate adds up separately counted pieces; the exact count of the joined text decides.
    let content = join(chunk);
    let tokenCount = countTokens(content);
    while (tokenCount > max) {
      if (chunk.length - firstNew > 1) {
        chunk.pop();
        next--;
      } else if (firstNew > 0) {
        chunk.shift();
        firstNew--;
      } else {
        break; // one atom alone, which is within max by construction
      }
      content = join(chunk);
      tokenCount = countTokens(content);
    }
    out.push({ index: out.length, content, tokenCount, page });
    carried = overlapAtoms(chunk, overlap, keepLines);
  }
}

/**
 * Splits a document into chunks of at most `maxTokens` tokens (cl100k_base). Text is broken at
 * paragraphs, then lines, then sentences; a sentence longer than maxTokens is broken at spaces,
 * and a single run longer than that by characters. Each chunk starts with the last sentences of
 * the previous chunk (up to `overlapTokens` tokens, or the token tail of its last sentence when
 * that sentence alone is longer). Chunks never span pages and the overlap does not cross a page
 * boundary. Empty pages produce nothing; the result is deterministic.
 */
export function chunkDocument(doc: Pick<ExtractedDocument, 'pages'>, options: ChunkOptions = {}): DocumentChunk[] {
  const max = options.maxTokens ?? DEFAULT_MAX_TOKENS;
  const overlap = options.overlapTokens ?? DEFAULT_OVERLAP_TOKENS;
  if (!Number.isInteger(max) || max < MIN_MAX_TOKENS) {
    throw new RangeError(`maxTokens must be an integer of at least ${MIN_MAX_TOKENS} (got ${max})`);
  }
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= max) {
    throw new RangeError(`overlapTokens must be an integer from 0 to maxTokens - 1 (got ${overlap})`);
  }
  const chunks: DocumentChunk[] = [];
  for (const { page, text, keepLines } of doc.pages) {
    const clean = text.replaceAll('\u0000', '').replace(/\r\n?/g, '\n');
    if (clean.trim()) chunkPage(clean, page, max, overlap, chunks, keepLines === true);
  }
  return chunks;
}
