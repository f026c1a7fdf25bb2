/**
 * Text extraction for document ingestion: bytes + content type in, plain text per page out.
 * Pure (no database, storage or network); see README.md in this folder for the decisions.
 */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import mammoth from 'mammoth';
import { getDocumentProxy } from 'unpdf';
import { parseMediaType } from '../../platform/content-type.js';

export type DocumentFormat = 'pdf' | 'docx' | 'html' | 'markdown' | 'text' | 'csv' | 'json';

export interface ExtractedPage {
  /** 1-based page number for PDFs; null for formats without pages. */
  page: number | null;
  text: string;
}

export interface ExtractedDocument {
  title?: string;
  pages: ExtractedPage[];
  /** The format the bytes were read as (set by extractText). */
  format?: DocumentFormat;
  /** Present (true) when a limit cut the text short; the rest of the file was not read. */
  truncated?: boolean;
}

export interface ExtractInput {
  bytes: Buffer;
  contentType: string;
  filename?: string;
  sourceUrl?: string;
}

/** Bounds on the work one extraction may do. */
export interface ExtractionLimits {
  /** Characters of text kept in total (after whitespace normalisation). */
  maxChars: number;
  /** PDF pages read; later pages are ignored. */
  maxPages: number;
  /** Bytes of a text-like file (text, Markdown, CSV, HTML) decoded; the rest is ignored. */
  maxTextBytes: number;
  /** JSON files larger than this are not parsed but read as plain text (bounded as text). */
  maxJsonBytes: number;
  /** Elements Readability may look at; bigger pages fall back to the whole body text. */
  maxHtmlElements: number;
}

export const EXTRACTION_LIMITS: Readonly<ExtractionLimits> = Object.freeze({
  maxChars: 5_000_000,
  maxPages: 2_000,
  maxTextBytes: 20 * 1024 * 1024,
  maxJsonBytes: 20 * 1024 * 1024,
  maxHtmlElements: 100_000,
});

export type ExtractionErrorCode = 'unsupported_type' | 'corrupt_file' | 'password_protected' | 'invalid_json';

/**
 * Extraction failed. `userMessage` is written for the end user (it becomes the ingestion task's
 * `error_message`); `message` and `cause` carry the technical details for the log.
 */
export class ExtractionError extends Error {
  constructor(
    readonly code: ExtractionErrorCode,
    readonly userMessage: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ExtractionError';
  }
}

const SUPPORTED_LIST = 'PDF, Word (.docx), HTML, Markdown, plain text, CSV or JSON';

function unsupported(what: string | undefined, detail: string, userMessage?: string): ExtractionError {
  return new ExtractionError(
    'unsupported_type',
    userMessage ?? `This file type${what ? ` (${what})` : ''} is not supported. Upload a ${SUPPORTED_LIST} file.`,
    `unsupported document type: ${detail}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Type detection: content type, then file extension, then the bytes themselves.

const MIME_FORMATS: Record<string, DocumentFormat> = {
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  'application/acrobat': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/csv': 'csv',
  'application/csv': 'csv',
  'text/x-csv': 'csv',
  'text/comma-separated-values': 'csv',
  'text/tab-separated-values': 'csv',
  'application/json': 'json',
  'text/json': 'json',
  'application/x-ndjson': 'text',
  'application/jsonl': 'text',
  'application/xml': 'text',
  'application/x-yaml': 'text',
  'application/yaml': 'text',
  'application/toml': 'text',
  'application/javascript': 'text',
  'application/typescript': 'text',
  'application/sql': 'text',
  'application/x-sh': 'text',
};

/** Content types that say nothing about the format: the extension or the bytes decide. */
const GENERIC_MIME = new Set([
  '',
  'application/octet-stream',
  'binary/octet-stream',
  'application/unknown',
  'application/x-unknown',
  'application/zip',
  'application/x-zip-compressed',
  'application/download',
  'application/x-download',
  'application/force-download',
  // Windows browsers send this for .csv as well as .xls.
  'application/vnd.ms-excel',
]);

const EXTENSION_FORMATS: Record<string, DocumentFormat> = {
  pdf: 'pdf',
  docx: 'docx',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  md: 'markdown',
  markdown: 'markdown',
  mdx: 'markdown',
  csv: 'csv',
  tsv: 'csv',
  json: 'json',
  txt: 'text',
  text: 'text',
  log: 'text',
  rst: 'text',
  jsonl: 'text',
  ndjson: 'text',
  xml: 'text',
  yaml: 'text',
  yml: 'text',
  toml: 'text',
};

const LEGACY_OFFICE_EXTENSIONS = new Set(['doc', 'xls', 'xlsx', 'ppt', 'pptx', 'odt', 'rtf', 'pages']);

function extensionOf(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const base = name.split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  return dot > 0 && dot < base.length - 1 ? base.slice(dot + 1).toLowerCase() : undefined;
}

function urlExtension(sourceUrl: string | undefined): string | undefined {
  if (!sourceUrl) return undefined;
  try {
    return extensionOf(decodeURIComponent(new URL(sourceUrl).pathname));
  } catch {
    return undefined;
  }
}

function startsWithAscii(bytes: Buffer, text: string, at = 0): boolean {
  return bytes.length >= at + text.length && bytes.toString('latin1', at, at + text.length) === text;
}

function isPdf(bytes: Buffer): boolean {
  // The header may follow some junk bytes; pdf.js looks in the first 1024 bytes too.
  return bytes.subarray(0, 1024).includes('%PDF-');
}

function isZip(bytes: Buffer): boolean {
  return startsWithAscii(bytes, 'PK\x03\x04');
}

function isDocx(bytes: Buffer): boolean {
  return isZip(bytes) && bytes.includes('word/document.xml');
}

function isOle2(bytes: Buffer): boolean {
  return bytes.length >= 8 && bytes.readUInt32BE(0) === 0xd0cf11e0 && bytes.readUInt32BE(4) === 0xa1b11ae1;
}

const LEGACY_OFFICE_MESSAGE =
  'Older Office files (.doc, .xls, .ppt) and other office formats are not supported. ' +
  'Save the document as .docx or PDF and upload it again.';

/** What the bytes look like, or undefined when they do not look like anything supported. */
function sniff(bytes: Buffer): DocumentFormat | undefined {
  if (isPdf(bytes)) return 'pdf';
  if (isDocx(bytes)) return 'docx';
  if (isZip(bytes) || isOle2(bytes)) return undefined;
  if (hasUtf16Bom(bytes)) return 'text';
  const head = cutAtUtf8Boundary(bytes, 64 * 1024);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(head);
  } catch {
    // Not UTF-8: legacy 8-bit text has no control bytes other than tab, line breaks and form feed;
    // binary formats nearly always do.
    return head.some((byte) => (byte < 0x20 && ![0x09, 0x0a, 0x0c, 0x0d].includes(byte)) || byte === 0x7f) ? undefined : 'text';
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000e-\u001a\u001c-\u001f]/.test(text)) return undefined; // binary (ESC allowed)
  const start = text.replace(/^\uFEFF/, '').trimStart();
  if (/^<!doctype\s+html|^<html[\s>]/i.test(start) || /<(head|body)[\s>]/i.test(start.slice(0, 2048))) return 'html';
  if ((start.startsWith('{') || start.startsWith('[')) && bytes.length <= EXTRACTION_LIMITS.maxJsonBytes) {
    try {
      JSON.parse(decodeText(bytes));
      return 'json';
    } catch {
      return 'text';
    }
  }
  return 'text';
}

function detectFormat(input: ExtractInput): DocumentFormat {
  const { mime } = parseMediaType(input.contentType);
  const ext = extensionOf(input.filename) ?? urlExtension(input.sourceUrl);
  const extFormat = ext ? EXTENSION_FORMATS[ext] : undefined;

  const declared = MIME_FORMATS[mime] ?? (mime.endsWith('+json') ? 'json' : undefined);
  if (declared) return declared;

  if (mime === 'text/plain') {
    // Browsers and clients often send text/plain for .md, .csv and .json files; the extension is
    // more precise. Binary bytes behind a text/plain label are still recognised.
    if (extFormat) return extFormat;
    if (isPdf(input.bytes)) return 'pdf';
    if (isDocx(input.bytes)) return 'docx';
    return 'text';
  }
  if (mime === 'application/rtf' || mime === 'text/rtf') throw unsupported('RTF', `content type ${mime}`, LEGACY_OFFICE_MESSAGE);
  if (mime.startsWith('text/')) return 'text';
  if (mime === 'application/msword' || (mime.startsWith('application/vnd.ms-') && mime !== 'application/vnd.ms-excel')) {
    throw unsupported(mime, `content type ${mime}`, LEGACY_OFFICE_MESSAGE);
  }
  if (mime.startsWith('application/vnd.openxmlformats') || mime.startsWith('application/vnd.oasis.opendocument')) {
    throw unsupported(mime, `content type ${mime}`, LEGACY_OFFICE_MESSAGE);
  }
  if (/^(image|audio|video|font|model)\//.test(mime)) {
    throw unsupported(mime, `content type ${mime}`);
  }
  // A generic or unknown content type: the file name decides, then the bytes.
  if (extFormat) return extFormat;
  if (ext && LEGACY_OFFICE_EXTENSIONS.has(ext)) throw unsupported(`.${ext}`, `extension .${ext}`, LEGACY_OFFICE_MESSAGE);
  const sniffed = sniff(input.bytes);
  if (sniffed) return sniffed;
  if (isOle2(input.bytes)) throw unsupported('legacy Office', 'OLE2 compound file', LEGACY_OFFICE_MESSAGE);
  const what = ext ? `.${ext}` : mime && !GENERIC_MIME.has(mime) ? mime : isZip(input.bytes) ? 'zip archive' : undefined;
  throw unsupported(what, `content type "${mime}", extension "${ext ?? ''}", bytes not recognised`);
}

// ---------------------------------------------------------------------------------------------
// Text helpers.

function hasUtf16Bom(bytes: Buffer): boolean {
  return bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff));
}

/** Largest prefix length ≤ limit that does not end inside a UTF-8 sequence. */
function cutAtUtf8Boundary(bytes: Buffer, limit: number): Buffer {
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
function decodeText(bytes: Buffer, charset?: string): string {
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
function clip(text: string, budget: number): { text: string; clipped: boolean } {
  if (text.length <= budget) return { text, clipped: false };
  if (budget <= 0) return { text: '', clipped: true };
  let cut = text.lastIndexOf('\n', budget);
  if (cut < budget * 0.9) cut = budget;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return { text: text.slice(0, cut).trimEnd(), clipped: true };
}

function singlePage(text: string, limits: ExtractionLimits, truncatedBefore = false): Pick<ExtractedDocument, 'pages' | 'truncated'> {
  const { text: kept, clipped } = clip(normalizeWhitespace(text), limits.maxChars);
  return { pages: [{ page: null, text: kept }], ...(clipped || truncatedBefore ? { truncated: true } : {}) };
}

function readTextBytes(bytes: Buffer, limit: number): { bytes: Buffer; cut: boolean } {
  if (bytes.length <= limit) return { bytes, cut: false };
  return { bytes: hasUtf16Bom(bytes) ? bytes.subarray(0, limit - (limit % 2)) : cutAtUtf8Boundary(bytes, limit), cut: true };
}

// ---------------------------------------------------------------------------------------------
// PDF (unpdf / pdf.js).

async function extractPdf(bytes: Buffer, limits: ExtractionLimits): Promise<ExtractedDocument> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // A copy: pdf.js may transfer (detach) the buffer it is given.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, isEvalSupported: false, stopAtErrors: false });
  } catch (error) {
    const name = (error as { name?: unknown } | null)?.name;
    if (name === 'PasswordException') {
      throw new ExtractionError(
        'password_protected',
        'This PDF is password-protected. Remove the password and upload it again.',
        `PDF is encrypted: ${String((error as Error).message)}`,
        { cause: error },
      );
    }
    throw new ExtractionError(
      'corrupt_file',
      'This PDF could not be read. It may be damaged or password-protected.',
      `PDF could not be opened: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  try {
    const pages: ExtractedPage[] = [];
    let budget = limits.maxChars;
    let truncated = pdf.numPages > limits.maxPages;
    const last = Math.min(pdf.numPages, limits.maxPages);
    for (let number = 1; number <= last; number++) {
      if (budget <= 0) {
        truncated = true;
        break;
      }
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      let raw = '';
      for (const item of content.items) {
        if ('str' in item) raw += item.str + (item.hasEOL ? '\n' : '');
      }
      page.cleanup();
      const { text, clipped } = clip(normalizeWhitespace(raw), budget);
      if (clipped) truncated = true;
      budget -= text.length;
      pages.push({ page: number, text });
    }
    let title: string | undefined;
    try {
      const meta = await pdf.getMetadata();
      const raw = (meta.info as { Title?: unknown } | undefined)?.Title;
      if (typeof raw === 'string' && normalizeWhitespace(raw)) title = normalizeWhitespace(raw);
    } catch {
      // Metadata is optional.
    }
    return { ...(title ? { title } : {}), pages, ...(truncated ? { truncated: true } : {}) };
  } catch (error) {
    throw new ExtractionError(
      'corrupt_file',
      'This PDF could not be read. It may be damaged or password-protected.',
      `PDF text extraction failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// DOCX (mammoth).

async function extractDocx(bytes: Buffer, limits: ExtractionLimits): Promise<ExtractedDocument> {
  let value: string;
  try {
    ({ value } = await mammoth.extractRawText({ buffer: bytes }));
  } catch (error) {
    throw new ExtractionError(
      'corrupt_file',
      'This Word document could not be read. It may be damaged, password-protected or not a .docx file.',
      `DOCX could not be read: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return singlePage(value, limits);
}

// ---------------------------------------------------------------------------------------------
// HTML (Readability on linkedom).

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

function bodyText(html: string): string {
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

// ---------------------------------------------------------------------------------------------
// JSON: flattened to `path: value` lines.

function jsonKey(parent: string, key: string): string {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return parent ? `${parent}.${key}` : key;
  return `${parent}[${JSON.stringify(key)}]`;
}

function jsonScalar(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null) return 'null';
  return String(value);
}

/**
 * One line per leaf: `orders[0].customer.name: Ada`. Empty objects and arrays appear as `{}`
 * and `[]`; a top-level scalar is just its value. Iterative, so deep nesting cannot overflow
 * the stack; stops once `budget` characters have been produced.
 */
function flattenJson(root: unknown, budget: number): { text: string; clipped: boolean } {
  const lines: string[] = [];
  let size = 0;
  const stack: Array<[string, unknown]> = [['', root]];
  while (stack.length > 0) {
    if (size > budget) return { text: lines.join('\n'), clipped: true };
    const [path, value] = stack.pop()!;
    let line: string | undefined;
    if (Array.isArray(value)) {
      if (value.length === 0) line = `${path}: []`;
      for (let i = value.length - 1; i >= 0; i--) stack.push([`${path}[${i}]`, value[i]]);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      if (entries.length === 0) line = `${path}: {}`;
      for (let i = entries.length - 1; i >= 0; i--) stack.push([jsonKey(path, entries[i]![0]), entries[i]![1]]);
    } else {
      line = path ? `${path}: ${jsonScalar(value)}` : jsonScalar(value);
    }
    if (line !== undefined) {
      if (line.startsWith(': ')) line = line.slice(2); // empty container at the top level
      lines.push(line);
      size += line.length + 1;
    }
  }
  return { text: lines.join('\n'), clipped: false };
}

function extractJson(bytes: Buffer, charset: string | undefined, limits: ExtractionLimits): ExtractedDocument {
  if (bytes.length > limits.maxJsonBytes) {
    // Too big to parse safely: read it as (bounded) text instead.
    const { bytes: kept, cut } = readTextBytes(bytes, limits.maxTextBytes);
    return singlePage(decodeText(kept, charset), limits, cut);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(decodeText(bytes, charset));
  } catch (error) {
    throw new ExtractionError(
      'invalid_json',
      'This JSON file could not be read because it is not valid JSON.',
      `invalid JSON: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const { text, clipped } = flattenJson(parsed, limits.maxChars);
  return singlePage(text, limits, clipped);
}

// ---------------------------------------------------------------------------------------------
// Markdown, plain text and CSV.

function markdownTitle(text: string): string | undefined {
  const body = text.replace(/^---\n[\s\S]*?\n---\n/, ''); // YAML front matter
  for (const line of body.split('\n', 200)) {
    const match = /^#[ \t]+(.+?)[ \t#]*$/.exec(line);
    if (match?.[1]) return normalizeWhitespace(match[1]) || undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------

/**
 * Extracts the text of a document. The format comes from the content type, else the file name's
 * (or source URL's) extension, else the bytes. Throws ExtractionError for unsupported, corrupt or
 * encrypted files; an empty or image-only document gives pages with empty text (not an error).
 */
export async function extractText(
  input: ExtractInput,
  limitOverrides: Partial<ExtractionLimits> = {},
): Promise<ExtractedDocument> {
  const limits: ExtractionLimits = { ...EXTRACTION_LIMITS, ...limitOverrides };
  const raw: Uint8Array = input.bytes;
  const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const contentType = input.contentType ?? '';
  const format = detectFormat({ ...input, bytes, contentType });
  const { charset } = parseMediaType(contentType);
  let doc: ExtractedDocument;
  switch (format) {
    case 'pdf':
      doc = await extractPdf(bytes, limits);
      break;
    case 'docx':
      doc = await extractDocx(bytes, limits);
      break;
    case 'json':
      doc = extractJson(bytes, charset, limits);
      break;
    case 'html': {
      const { bytes: kept, cut } = readTextBytes(bytes, limits.maxTextBytes);
      doc = extractHtml(decodeText(kept, charset ?? htmlCharset(kept)), limits, cut);
      break;
    }
    case 'markdown':
    case 'text':
    case 'csv': {
      const { bytes: kept, cut } = readTextBytes(bytes, limits.maxTextBytes);
      let text = decodeText(kept, charset);
      const tsv =
        format === 'csv' && (extensionOf(input.filename) === 'tsv' || parseMediaType(contentType).mime === 'text/tab-separated-values');
      // Tabs would be collapsed to spaces; keep TSV cells apart.
      if (tsv) text = text.replace(/\t/g, ' | ');
      const title = format === 'markdown' ? markdownTitle(text.replace(/\r\n?/g, '\n')) : undefined;
      doc = { ...(title ? { title } : {}), ...singlePage(text, limits, cut) };
      break;
    }
  }
  return { ...doc, format };
}
