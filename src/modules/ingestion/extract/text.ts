/** Markdown, plain text and CSV (TSV): decoded text, one page; Markdown's first heading is its title. */
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

/** Markdown, plain text or CSV; a TSV (by extension or content type) keeps its cells apart. */
export function extractPlainText(
  bytes: Buffer,
  options: { format: 'markdown' | 'text' | 'csv'; charset: string | undefined; tsv: boolean; limits: ExtractionLimits },
): ExtractedDocument {
  const { bytes: kept, cut } = readTextBytes(bytes, options.limits.maxTextBytes);
  let text = decodeText(kept, options.charset);
  // Tabs would be collapsed to spaces; keep TSV cells apart.
  if (options.format === 'csv' && options.tsv) text = text.replace(/\t/g, ' | ');
  const title = options.format === 'markdown' ? markdownTitle(text.replace(/\r\n?/g, '\n')) : undefined;
  return { ...(title ? { title } : {}), ...singlePage(text, options.limits, cut) };
}
