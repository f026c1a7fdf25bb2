/** Format detection: the content type, then the file name's (or URL's) extension, then the bytes. */
import { parseMediaType } from '../../../platform/content-type.js';
import { cutAtUtf8Boundary, decodeText, hasUtf16Bom, startsWithAscii } from './decode.js';
import { type DocumentFormat, EXTRACTION_LIMITS, type ExtractInput, unsupported } from './types.js';

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

export function extensionOf(name: string | undefined): string | undefined {
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

export function detectFormat(input: ExtractInput): DocumentFormat {
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
