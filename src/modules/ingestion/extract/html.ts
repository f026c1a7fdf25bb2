/** HTML: the readable article (Readability on linkedom), else the visible body text. */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { decodeText, normalizeWhitespace, readTextBytes, singlePage } from './decode.js';
import type { ExtractedDocument, ExtractionLimits } from './types.js';

/** The minimal DOM surface used here (the project compiles without the DOM lib). */
interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
  hasAttribute?(name: string): boolean;
  getAttribute?(name: string): string | null;
}
interface DomDocument {
  title?: string;
  body: DomNode | null;
  documentElement: DomNode | null;
}

const SKIPPED_ELEMENTS = new Set([
  'SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'OBJECT', 'EMBED', 'HEAD',
  'TITLE', 'META', 'LINK', 'SELECT', 'OPTION', 'BUTTON', 'INPUT', 'TEXTAREA', 'MATH',
]);
const PARAGRAPH_ELEMENTS = new Set([
  'P', 'DIV', 'SECTION', 'ARTICLE', 'MAIN', 'HEADER', 'FOOTER', 'NAV', 'ASIDE', 'BLOCKQUOTE', 'PRE',
  'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'UL', 'OL', 'DL', 'TABLE', 'FIGURE', 'FIGCAPTION', 'FORM',
  'FIELDSET', 'ADDRESS', 'DETAILS', 'SUMMARY', 'HR', 'BODY', 'HTML',
]);
const LINE_ELEMENTS = new Set(['LI', 'DT', 'DD', 'TR', 'CAPTION']);
const CELL_ELEMENTS = new Set(['TD', 'TH']);
/** Private-use markers for structure, replaced once the text is assembled. */
const CELL_END = '\ue000';
const LINE_BREAK = '\ue001';
const PARAGRAPH_BREAK = '\ue002';

/**
 * linkedom only fills `body` when the markup has a body (or html) element around the content;
 * fragments are wrapped so that both Readability and the body fallback see them.
 */
function ensureDocumentShape(html: string): string {
  if (/<body[\s>]/i.test(html)) return html;
  const head = /<head[\s>][\s\S]*?<\/head\s*>/i.exec(html)?.[0] ?? '';
  const rest = (head ? html.replace(head, '') : html).replace(/<!doctype[^>]*>|<\/?html(?:\s[^>]*)?>/gi, '');
  return `<!DOCTYPE html><html>${head}<body>${rest}</body></html>`;
}

/** Visible text of an element, with paragraph breaks for block elements and lines for rows. */
function domToText(root: DomNode): string {
  const out: string[] = [];
  const PRE_END = Symbol('pre-end');
  let inPre = 0;
  const stack: Array<DomNode | string | typeof PRE_END> = [root];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (item === PRE_END) {
      inPre--;
      continue;
    }
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    if (item.nodeType === 3) {
      const text = (item.textContent ?? '').replace(/[\ue000-\ue002]/g, '');
      out.push(inPre > 0 ? text : text.replace(/\s+/g, ' '));
      continue;
    }
    if (item.nodeType !== 1 && item.nodeType !== 9 && item.nodeType !== 11) continue;
    const tag = item.nodeName.toUpperCase();
    if (SKIPPED_ELEMENTS.has(tag)) continue;
    if (item.hasAttribute?.('hidden') || item.getAttribute?.('aria-hidden') === 'true') continue;
    if (tag === 'BR') {
      out.push('\n');
      continue;
    }
    let before = '';
    let after = '';
    if (PARAGRAPH_ELEMENTS.has(tag)) before = after = PARAGRAPH_BREAK;
    else if (LINE_ELEMENTS.has(tag)) before = after = LINE_BREAK;
    else if (CELL_ELEMENTS.has(tag)) after = CELL_END;
    if (tag === 'PRE') {
      inPre++;
      stack.push(PRE_END);
    }
    stack.push(after);
    const children = item.childNodes;
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    out.push(before);
  }
  // Cells are separated by " | " (not after a row's last cell); a run of breaks is one line
  // break, or a paragraph break when a block element is among them.
  return out
    .join('')
    .replace(/\ue000[\s\ue000]*(?=[\ue001\ue002]|$)/g, '')
    .replace(/\ue000+/g, ' | ')
    .replace(/[\ue001\ue002][\s\ue001\ue002]*/g, (run) => (run.includes(PARAGRAPH_BREAK) ? '\n\n' : '\n'));
}

function parseDocument(html: string): DomDocument {
  return parseHTML(ensureDocumentShape(html)).document as unknown as DomDocument;
}

/** The text of a whole HTML (or XHTML) body, without Readability: also EPUB chapters. */
export function bodyText(html: string): string {
  const doc = parseDocument(html);
  const root = doc.body ?? doc.documentElement;
  return root ? domToText(root) : '';
}

function extractHtml(html: string, limits: ExtractionLimits, truncatedBefore: boolean): ExtractedDocument {
  const doc = parseDocument(html);
  const documentTitle = normalizeWhitespace(doc.title ?? '');
  let articleTitle = '';
  let text = '';
  try {
    const reader = new Readability<DomNode>(doc as never, {
      maxElemsToParse: limits.maxHtmlElements,
      // Return the article element itself instead of serialising it to HTML and parsing again.
      serializer: (node: unknown) => node as DomNode,
    });
    const article = reader.parse();
    if (article) {
      articleTitle = normalizeWhitespace(article.title ?? '');
      if (article.content) text = normalizeWhitespace(domToText(article.content));
    }
  } catch {
    // Readability gives up on huge or odd pages; the body text below is the fallback.
  }
  if (!text) text = bodyText(html); // Readability mutates the document, so parse again.
  const title = articleTitle || documentTitle;
  return { ...(title ? { title } : {}), ...singlePage(text, limits, truncatedBefore) };
}

function htmlCharset(bytes: Buffer): string | undefined {
  const head = bytes.toString('latin1', 0, Math.min(bytes.length, 4096));
  return /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1]?.toLowerCase();
}

/** An HTML document's bytes: decoded with the declared charset, else its <meta charset>. */
export function extractHtmlBytes(bytes: Buffer, charset: string | undefined, limits: ExtractionLimits): ExtractedDocument {
  const { bytes: kept, cut } = readTextBytes(bytes, limits.maxTextBytes);
  return extractHtml(decodeText(kept, charset ?? htmlCharset(kept)), limits, cut);
}
