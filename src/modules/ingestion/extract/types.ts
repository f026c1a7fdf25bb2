/** Shapes, limits and the one error of extraction. */
export type DocumentFormat =
  | 'pdf'
  | 'docx'
  | 'xlsx'
  | 'pptx'
  | 'odt'
  | 'ods'
  | 'odp'
  | 'epub'
  | 'rtf'
  | 'html'
  | 'markdown'
  | 'text'
  | 'csv'
  | 'json';

/**
 * What a page's number counts in each format (stored with the document, so a citation can say
 * "sheet 2" or "slide 3"); null for the formats read as one entry without a number.
 */
export const PAGE_UNITS: Readonly<Record<DocumentFormat, 'page' | 'sheet' | 'slide' | 'chapter' | null>> = {
  pdf: 'page',
  xlsx: 'sheet',
  ods: 'sheet',
  pptx: 'slide',
  odp: 'slide',
  epub: 'chapter',
  docx: null,
  odt: null,
  rtf: null,
  html: null,
  markdown: null,
  text: null,
  csv: null,
  json: null,
};

export interface ExtractedPage {
  /**
   * 1-based number of the page (PDF), sheet (XLSX, ODS), slide (PPTX, ODP) or chapter (EPUB, in
   * spine order); null for formats without pages.
   */
  page: number | null;
  text: string;
  /**
   * Each line is a row (spreadsheets): the chunker keeps a line whole (it is split only when it
   * alone exceeds a chunk) and overlaps chunks by whole lines.
   */
  keepLines?: boolean;
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
  /** PDF pages, sheets, slides or EPUB chapters read; later ones are ignored. */
  maxPages: number;
  /** Bytes of a text-like file (text, Markdown, CSV, HTML) decoded; the rest is ignored. */
  maxTextBytes: number;
  /** JSON files larger than this are not parsed but read as plain text (bounded as text). */
  maxJsonBytes: number;
  /** Elements Readability may look at; bigger pages fall back to the whole body text. */
  maxHtmlElements: number;
  /** Entries a zip-based file (DOCX, XLSX, PPTX, ODT, ODS, ODP, EPUB) may hold. */
  maxZipEntries: number;
  /** Total uncompressed size of those entries, as declared and as inflated. */
  maxZipUncompressedBytes: number;
  /** Largest compression ratio of an entry bigger than 1 MiB uncompressed. */
  maxZipRatio: number;
  /** Rows read per sheet; later rows are ignored. */
  maxSheetRows: number;
}

export const EXTRACTION_LIMITS: Readonly<ExtractionLimits> = Object.freeze({
  maxChars: 5_000_000,
  maxPages: 2_000,
  maxTextBytes: 20 * 1024 * 1024,
  maxJsonBytes: 20 * 1024 * 1024,
  maxHtmlElements: 100_000,
  maxZipEntries: 10_000,
  maxZipUncompressedBytes: 200 * 1024 * 1024,
  maxZipRatio: 100,
  maxSheetRows: 100_000,
});

export type ExtractionErrorCode = 'unsupported_type' | 'corrupt_file' | 'password_protected' | 'invalid_json' | 'too_large';

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

const SUPPORTED_LIST =
  'PDF, Word (.docx), Excel (.xlsx), PowerPoint (.pptx), OpenDocument (.odt, .ods, .odp), EPUB, RTF, HTML, Markdown, plain text, CSV or JSON';

export function unsupported(what: string | undefined, detail: string, userMessage?: string): ExtractionError {
  return new ExtractionError(
    'unsupported_type',
    userMessage ?? `This file type${what ? ` (${what})` : ''} is not supported. Upload a ${SUPPORTED_LIST} file.`,
    `unsupported document type: ${detail}`,
  );
}
