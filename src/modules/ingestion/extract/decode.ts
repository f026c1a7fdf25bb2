/** Decoding bytes to text (charset, BOM, Windows-1252 fallback) and the text helpers every format shares. */
import type { ExtractedDocument, ExtractionLimits } from './types.js';

export function startsWithAscii(bytes: Buffer, text: string, at = 0): boolean {
  return bytes.length >= at + text.length && bytes.toString('latin1', at, at + text.length) === text;
}

export function hasUtf16Bom(bytes: Buffer): boolean {
  return bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff));
}

/** Largest prefix length ≤ limit that does not end inside a UTF-8 sequence. */
export function cutAtUtf8Boundary(bytes: Buffer, limit: number): Buffer {
  if (bytes.length <= limit) return bytes;
  let cut = limit;
  // Step back over continuation bytes (10xxxxxx) so the cut lands before a lead byte.
  while (cut > 0 && limit - cut < 4 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return bytes.subarray(0, cut);
}

function tryDecoder(label: string | undefined): InstanceType<typeof TextDecoder> | undefined {
  if (!label) return undefined;
  try {
    return new TextDecoder(label);
  } catch {
    return undefined; // unknown charset label
  }
}

/** Windows-1252 characters for bytes 0x80–0x9F (the rest of the code page is Latin-1). */
const CP1252_HIGH =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/**
 * Node 20's TextDecoder('windows-1252') decodes as ISO-8859-1 (0x80–0x9F become C1 controls
 * instead of €, –, “ …), so the upper range is mapped by hand.
 */
function decodeWindows1252(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/[\u0080-\u009f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]!);
}

/**
 * Bytes to a string: a BOM wins, then the declared charset (content type or HTML meta), then
 * UTF-8 if the bytes are valid UTF-8, else Windows-1252 (what legacy "ANSI" exports use).
 * A leading BOM is never part of the result.
 */
export function decodeText(bytes: Buffer, charset?: string): string {
  let text: string;
  if (startsWithAscii(bytes, '\xef\xbb\xbf')) text = new TextDecoder('utf-8').decode(bytes);
  else if (bytes[0] === 0xff && bytes[1] === 0xfe) text = new TextDecoder('utf-16le').decode(bytes);
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) text = new TextDecoder('utf-16be').decode(bytes);
  else {
    const declared = tryDecoder(charset);
    if (declared?.encoding === 'windows-1252') text = decodeWindows1252(bytes);
    else if (declared && declared.encoding !== 'utf-8') text = declared.decode(bytes);
    else {
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        text = decodeWindows1252(bytes);
      }
    }
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * Normalises extracted text: line endings to \n, control characters (NUL included), soft
 * hyphens, zero-width spaces and unpaired surrogates dropped, runs of spaces and tabs (and
 * other Unicode spaces) collapsed to one space, spaces around line breaks removed, at most one
 * blank line in a row (paragraph breaks are kept), trimmed.
 */
export function normalizeWhitespace(text: string): string {
  return (
    text
      .replace(/\r\n?/g, '\n')
      .replace(/[\f\v\u0085\u2028\u2029]/g, '\n')
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u0008\u000e-\u001f\u007f-\u0084\u0086-\u009f\u00ad\u200b\u2060\ufeff]/g, '')
      .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '')
      .replace(/[\t \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+/g, ' ')
      .replace(/ ?\n ?/g, '\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
  );
}

/** Keeps the text within `budget` characters, cutting at a line break when one is near. */
export function clip(text: string, budget: number): { text: string; clipped: boolean } {
  if (text.length <= budget) return { text, clipped: false };
  if (budget <= 0) return { text: '', clipped: true };
  let cut = text.lastIndexOf('\n', budget);
  if (cut < budget * 0.9) cut = budget;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return { text: text.slice(0, cut).trimEnd(), clipped: true };
}

export function singlePage(text: string, limits: ExtractionLimits, truncatedBefore = false): Pick<ExtractedDocument, 'pages' | 'truncated'> {
  const { text: kept, clipped } = clip(normalizeWhitespace(text), limits.maxChars);
  return { pages: [{ page: null, text: kept }], ...(clipped || truncatedBefore ? { truncated: true } : {}) };
}

export function readTextBytes(bytes: Buffer, limit: number): { bytes: Buffer; cut: boolean } {
  if (bytes.length <= limit) return { bytes, cut: false };
  return { bytes: hasUtf16Bom(bytes) ? bytes.subarray(0, limit - (limit % 2)) : cutAtUtf8Boundary(bytes, limit), cut: true };
}

/**
 * Numbered pages (sheets, slides, chapters) from producers called in order, so nothing after the
 * `maxChars` budget or past `maxPages` is parsed. Numbers follow the producers' order, 1-based; a
 * producer returning undefined (a missing part) gives no page, and its number is not reused.
 */
export function numberedPages(
  producers: ReadonlyArray<() => string | undefined>,
  limits: ExtractionLimits,
  options: { keepLines?: boolean; truncated?: boolean } = {},
): Pick<ExtractedDocument, 'pages' | 'truncated'> {
  const pages: ExtractedDocument['pages'] = [];
  let budget = limits.maxChars;
  let truncated = (options.truncated ?? false) || producers.length > limits.maxPages;
  for (const [i, produce] of producers.slice(0, limits.maxPages).entries()) {
    if (budget <= 0) {
      truncated = true;
      break;
    }
    const raw = produce();
    if (raw === undefined) continue;
    const { text, clipped } = clip(normalizeWhitespace(raw), budget);
    if (clipped) truncated = true;
    budget -= text.length;
    pages.push({ page: i + 1, text, ...(options.keepLines ? { keepLines: true } : {}) });
  }
  return { pages, ...(truncated ? { truncated: true } : {}) };
}
