/**
 * Text extraction for document ingestion: bytes + content type in, plain text per page out.
 * Pure (no database, storage or network); see ../README.md for the decisions. One file per
 * format; this entry detects the format (detect.ts) and hands the bytes to that format's extractor.
 * PDF, DOCX and HTML load their libraries (unpdf, mammoth, linkedom + Readability) on first use,
 * so a process that never extracts such a file never loads them.
 */
import { parseMediaType } from '../../../platform/content-type.js';
import { detectFormat, extensionOf } from './detect.js';
import { extractJson } from './json.js';
import { extractPlainText } from './text.js';
import { type DocumentFormat, type ExtractedDocument, EXTRACTION_LIMITS, type ExtractInput, type ExtractionLimits } from './types.js';

export { normalizeWhitespace } from './decode.js';
export {
  type DocumentFormat,
  type ExtractedDocument,
  type ExtractedPage,
  type ExtractInput,
  EXTRACTION_LIMITS,
  ExtractionError,
  type ExtractionErrorCode,
  type ExtractionLimits,
  PAGE_UNITS,
} from './types.js';

/** What a format's extractor is given: the bytes, the declared content type and the limits. */
interface FormatInput {
  bytes: Buffer;
  mime: string;
  charset: string | undefined;
  filename: string | undefined;
  limits: ExtractionLimits;
}

const EXTRACTORS: Record<DocumentFormat, (input: FormatInput) => ExtractedDocument | Promise<ExtractedDocument>> = {
  pdf: async ({ bytes, limits }) => (await import('./pdf.js')).extractPdf(bytes, limits),
  docx: async ({ bytes, limits }) => (await import('./docx.js')).extractDocx(bytes, limits),
  json: ({ bytes, charset, limits }) => extractJson(bytes, charset, limits),
  html: async ({ bytes, charset, limits }) => (await import('./html.js')).extractHtmlBytes(bytes, charset, limits),
  markdown: ({ bytes, charset, limits }) => extractPlainText(bytes, { format: 'markdown', charset, tsv: false, limits }),
  text: ({ bytes, charset, limits }) => extractPlainText(bytes, { format: 'text', charset, tsv: false, limits }),
  csv: ({ bytes, mime, charset, filename, limits }) =>
    extractPlainText(bytes, { format: 'csv', charset, tsv: extensionOf(filename) === 'tsv' || mime === 'text/tab-separated-values', limits }),
  // Loaded on first use: a process that never reads these formats never loads their code.
  xlsx: async ({ bytes, limits }) => (await import('./xlsx.js')).extractXlsx(bytes, limits),
  pptx: async ({ bytes, limits }) => (await import('./pptx.js')).extractPptx(bytes, limits),
  odt: async ({ bytes, limits }) => (await import('./odf.js')).extractOdf(bytes, 'odt', limits),
  ods: async ({ bytes, limits }) => (await import('./odf.js')).extractOdf(bytes, 'ods', limits),
  odp: async ({ bytes, limits }) => (await import('./odf.js')).extractOdf(bytes, 'odp', limits),
  epub: async ({ bytes, limits }) => (await import('./epub.js')).extractEpub(bytes, limits),
  rtf: async ({ bytes, limits }) => (await import('./rtf.js')).extractRtf(bytes, limits),
};

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
  const { mime, charset } = parseMediaType(contentType);
  const doc = await EXTRACTORS[format]({ bytes, mime, charset, filename: input.filename, limits });
  return { ...doc, format };
}
