/** Markdown, plain text and CSV (TSV): decoded text, one page; Markdown's first heading is its title; CSV rows kept whole. */
import { decodeText, normalizeWhitespace, readTextBytes, singlePage } from './decode.js';
import type { ExtractedDocument, ExtractionLimits } from './types.js';

function markdownTitle(text: string): string | undefined {
  const body = text.replace(/^---\n[\s\S]*?\n---\n/, ''); // YAML front matter
  for (const line of body.split('\n', 200)) {
    const match = /^#[ \t]+(.+?)[ \t#]*$/.exec(line);
    if (match?.[1]) return normalizeWhitespace(match[1]) || undefined;
  }
  return undefined;
}

/**
 * One CSV (TSV) record per line: a line break inside a quoted field (one that starts with `"`
 * right after a line break or a `,` `;` tab delimiter) becomes a space, so the chunker, which
 * keeps lines whole, keeps the record whole. A quote left open at the end is malformed input:
 * the line breaks after it are left alone.
 */
export function csvRecordsOnLines(text: string): string {
  let out = '';
  let quoted = false;
  // Where the open quoted field started, in the input and in the output (to undo a never-closed one).
  let openedIn = 0;
  let openedOut = 0;
  let joined = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          out += '""';
          i++;
          continue;
        }
        quoted = false;
      } else if (c === '\n' || c === '\r') {
        if (c === '\r' && text[i + 1] === '\n') i++;
        out += ' ';
        joined = true;
        continue;
      }
      out += c;
      continue;
    }
    if (c === '"') {
      const before = out[out.length - 1];
      if (before === undefined || before === '\n' || before === '\r' || before === ',' || before === ';' || before === '\t') {
        quoted = true;
        openedIn = i;
        openedOut = out.length;
        joined = false;
      }
    }
    out += c;
  }
  return quoted && joined ? out.slice(0, openedOut) + text.slice(openedIn) : out;
}

/** Markdown, plain text or CSV; a TSV (by extension or content type) keeps its cells apart. */
export function extractPlainText(
  bytes: Buffer,
  options: { format: 'markdown' | 'text' | 'csv'; charset: string | undefined; tsv: boolean; limits: ExtractionLimits },
): ExtractedDocument {
  const { bytes: kept, cut } = readTextBytes(bytes, options.limits.maxTextBytes);
  let text = decodeText(kept, options.charset);
  if (options.format === 'csv') {
    text = csvRecordsOnLines(text);
    // Tabs would be collapsed to spaces; keep TSV cells apart.
    if (options.tsv) text = text.replace(/\t/g, ' | ');
    // A row is a line, and the chunker keeps lines whole (as it does for spreadsheet rows).
    const { pages, truncated } = singlePage(text, options.limits, cut);
    return { pages: pages.map((page) => ({ ...page, keepLines: true })), ...(truncated ? { truncated } : {}) };
  }
  const title = options.format === 'markdown' ? markdownTitle(text.replace(/\r\n?/g, '\n')) : undefined;
  return { ...(title ? { title } : {}), ...singlePage(text, options.limits, cut) };
}
