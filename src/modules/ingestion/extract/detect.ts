/** Format detection: the content type, then the file name's (or URL's) extension, then the bytes. */
import { parseMediaType } from '../../../platform/content-type.js';
import { cutAtUtf8Boundary, decodeText, hasUtf16Bom, startsWithAscii } from './decode.js';
import { isRtf } from './rtf.js';
import { type DocumentFormat, EXTRACTION_LIMITS, type ExtractInput, unsupported } from './types.js';
import { isZip } from './zip.js';

const MIME_FORMATS: Record<string, DocumentFormat> = {
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  'application/acrobat': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.ms-excel.sheet.macroenabled.12': 'xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/vnd.ms-powerpoint.presentation.macroenabled.12': 'pptx',
  'application/vnd.oasis.opendocument.text': 'odt',
  'application/vnd.oasis.opendocument.spreadsheet': 'ods',
  'application/vnd.oasis.opendocument.presentation': 'odp',
  'application/epub+zip': 'epub',
  'application/rtf': 'rtf',
  'application/x-rtf': 'rtf',
  'text/rtf': 'rtf',
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
  xlsx: 'xlsx',
  xlsm: 'xlsx',
  pptx: 'pptx',
  pptm: 'pptx',
  odt: 'odt',
  ods: 'ods',
  odp: 'odp',
  epub: 'epub',
  rtf: 'rtf',
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

const LEGACY_OFFICE_EXTENSIONS = new Set(['doc', 'xls', 'ppt', 'pages', 'numbers', 'key', 'odg', 'wpd', 'wps']);

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

/**
 * The format of a zip by its entries: OOXML by its main part ([Content_Types].xml plus
 * word/document.xml, xl/workbook.xml or ppt/presentation.xml), OpenDocument and EPUB by the stored
 * `mimetype` entry they put first.
 */
function zipFormat(bytes: Buffer): DocumentFormat | undefined {
  if (!isZip(bytes)) return undefined;
  if (bytes.length >= 30 && startsWithAscii(bytes, 'mimetype', 30)) {
    const start = 30 + bytes.readUInt16LE(26) + bytes.readUInt16LE(28);
    const mimetype = bytes.toString('latin1', start, start + Math.min(bytes.readUInt32LE(18), 100)).trim();
    const format = ZIP_MIMETYPES[mimetype];
    if (format) return format;
  }
  if (!bytes.includes('[Content_Types].xml')) return undefined;
  if (bytes.includes('word/document.xml')) return 'docx';
  if (bytes.includes('xl/workbook.xml')) return 'xlsx';
  if (bytes.includes('ppt/presentation.xml')) return 'pptx';
  return undefined;
}

const ZIP_MIMETYPES: Record<string, DocumentFormat> = {
  'application/vnd.oasis.opendocument.text': 'odt',
  'application/vnd.oasis.opendocument.spreadsheet': 'ods',
  'application/vnd.oasis.opendocument.presentation': 'odp',
  'application/epub+zip': 'epub',
};

function isOle2(bytes: Buffer): boolean {
  return bytes.length >= 8 && bytes.readUInt32BE(0) === 0xd0cf11e0 && bytes.readUInt32BE(4) === 0xa1b11ae1;
}

const LEGACY_OFFICE_MESSAGE =
  'Older Office files (.doc, .xls, .ppt) and other office formats are not supported. ' +
  'Save the document as .docx or PDF (spreadsheets as .xlsx, presentations as .pptx) and upload it again.';

/** What the bytes look like, or undefined when they do not look like anything supported. */
function sniff(bytes: Buffer): DocumentFormat | undefined {
  if (isPdf(bytes)) return 'pdf';
  const zipped = zipFormat(bytes);
  if (zipped) return zipped;
  if (isZip(bytes) || isOle2(bytes)) return undefined;
  if (isRtf(bytes)) return 'rtf';
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
    return zipFormat(input.bytes) ?? (isRtf(input.bytes) ? 'rtf' : 'text');
  }
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
