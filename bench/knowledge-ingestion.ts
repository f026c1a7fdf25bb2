/**
 * Phase (a) of bench/knowledge.ts: ingestion throughput per format, through the real upload →
 * confirm → queue path (extract + chunk + store, no embedding calls).
 *
 * Every supported format is generated from the same prose (bench/corpus.ts), one "page" of
 * ~3,000 characters of text per unit the format has: a PDF page, a slide (PPTX, ODP), a sheet
 * (XLSX, ODS), an EPUB chapter, or 3,000 characters of a format without pages. So pages/s compares
 * the formats on the same amount of text, and MB/s on their bytes. The files are made by the test
 * builders (test/support/document-files.ts, office-files.ts); zip-based formats are deflated, as
 * office applications write them.
 */
import { chunkDocument } from '../src/modules/ingestion/chunk.js';
import { type DocumentFormat, extractText } from '../src/modules/ingestion/extract/index.js';
import { buildDocx, buildPdf } from '../test/support/document-files.js';
import { buildEpub, buildOdp, buildOds, buildOdt, buildPptx, buildRtf, buildXlsx } from '../test/support/office-files.js';
import { COMMON, COMMON_WORDS, prng, prose, wrap } from './corpus.js';
import { fmt, loadAverage } from './support.js';

/** Characters of prose per page, whatever the format. */
export const PAGE_CHARS = 3000;
/** Rows of a sheet and lines of a slide are cut from the page's prose at these widths. */
const ROW_CHARS = 60;
const SLIDE_LINE_CHARS = 100;
const PDF_LINE_CHARS = 80;

const paragraphs = (page: string) => page.split('\n\n').filter(Boolean);
const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
const csvField = (text: string) => (/[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

export interface IngestionFormat {
  format: DocumentFormat;
  label: string;
  ext: string;
  contentType: string;
  /** What one page is in this format (printed with the table). */
  page: string;
  /** A file whose pages are these ~3,000-character texts. */
  make: (pages: string[]) => Buffer;
}

/** Every format extract/ reads (extract/types.ts DocumentFormat), in the order of the table. */
export const INGESTION_FORMATS: IngestionFormat[] = [
  {
    format: 'pdf',
    label: 'PDF',
    ext: 'pdf',
    contentType: 'application/pdf',
    page: 'PDF page',
    make: (pages) => buildPdf(pages.map((p) => wrap(p, PDF_LINE_CHARS))),
  },
  {
    format: 'docx',
    label: 'DOCX',
    ext: 'docx',
    contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    page: '3,000 characters',
    make: (pages) => buildDocx(pages.flatMap(paragraphs), [], true),
  },
  {
    format: 'odt',
    label: 'ODT',
    ext: 'odt',
    contentType: 'application/vnd.oasis.opendocument.text',
    page: '3,000 characters',
    make: (pages) => buildOdt({ heading: 'Report', paragraphs: pages.flatMap(paragraphs) }, { deflate: true }),
  },
  {
    format: 'rtf',
    label: 'RTF',
    ext: 'rtf',
    contentType: 'application/rtf',
    page: '3,000 characters',
    make: (pages) => buildRtf(pages.flatMap(paragraphs)),
  },
  {
    format: 'epub',
    label: 'EPUB',
    ext: 'epub',
    contentType: 'application/epub+zip',
    page: 'chapter',
    make: (pages) =>
      buildEpub({ title: 'Book', chapters: pages.map((p, i) => ({ heading: `Chapter ${i + 1}`, paragraphs: paragraphs(p) })) }, { deflate: true }),
  },
  {
    format: 'pptx',
    label: 'PPTX',
    ext: 'pptx',
    contentType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    page: `slide (lines of ≤ ${SLIDE_LINE_CHARS} characters)`,
    make: (pages) => buildPptx(pages.map((p) => ({ lines: wrap(p, SLIDE_LINE_CHARS).filter(Boolean) })), { deflate: true }),
  },
  {
    format: 'odp',
    label: 'ODP',
    ext: 'odp',
    contentType: 'application/vnd.oasis.opendocument.presentation',
    page: `slide (lines of ≤ ${SLIDE_LINE_CHARS} characters)`,
    make: (pages) => buildOdp(pages.map((p) => ({ lines: wrap(p, SLIDE_LINE_CHARS).filter(Boolean) })), { deflate: true }),
  },
  {
    format: 'xlsx',
    label: 'XLSX',
    ext: 'xlsx',
    contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    page: `sheet of ~${Math.round(PAGE_CHARS / ROW_CHARS)} rows (number, text of ≤ ${ROW_CHARS} characters)`,
    make: (pages) => buildXlsx(pages.map((p, i) => ({ name: `Sheet ${i + 1}`, rows: rowsOf(p).map((text, r) => [r + 1, text]) })), { deflate: true }),
  },
  {
    format: 'ods',
    label: 'ODS',
    ext: 'ods',
    contentType: 'application/vnd.oasis.opendocument.spreadsheet',
    page: `sheet of ~${Math.round(PAGE_CHARS / ROW_CHARS)} rows (number, text of ≤ ${ROW_CHARS} characters)`,
    make: (pages) => buildOds(pages.map((p, i) => ({ name: `Sheet ${i + 1}`, rows: rowsOf(p).map((text, r) => [String(r + 1), text]) })), { deflate: true }),
  },
  {
    format: 'html',
    label: 'HTML',
    ext: 'html',
    contentType: 'text/html; charset=utf-8',
    page: '3,000 characters',
    make: (pages) =>
      Buffer.from(
        '<!doctype html><html><head><meta charset="utf-8"><title>Report</title></head><body>' +
          '<nav><a href="/">Home</a> <a href="/docs">Docs</a></nav><article><h1>Report</h1>' +
          pages.map((p, i) => `<h2>Section ${i + 1}</h2>${paragraphs(p).map((q) => `<p>${escapeHtml(q)}</p>`).join('')}`).join('\n') +
          '</article><footer>© Example</footer></body></html>',
        'utf8',
      ),
  },
  {
    format: 'markdown',
    label: 'Markdown',
    ext: 'md',
    contentType: 'text/markdown',
    page: '3,000 characters',
    make: (pages) => Buffer.from(`# Report\n\n${pages.map((p, i) => `## Section ${i + 1}\n\n${p}`).join('\n\n')}\n`, 'utf8'),
  },
  {
    format: 'text',
    label: 'plain text',
    ext: 'txt',
    contentType: 'text/plain',
    page: '3,000 characters',
    make: (pages) => Buffer.from(pages.join('\n\n'), 'utf8'),
  },
  {
    format: 'csv',
    label: 'CSV',
    ext: 'csv',
    contentType: 'text/csv',
    page: `3,000 characters (rows: number, text of ≤ ${ROW_CHARS} characters)`,
    make: (pages) => {
      let n = 0;
      const rows = pages.flatMap((p) => rowsOf(p).map((text) => `${++n},${csvField(text)}`));
      return Buffer.from(`id,text\n${rows.join('\n')}\n`, 'utf8');
    },
  },
  {
    format: 'json',
    label: 'JSON',
    ext: 'json',
    contentType: 'application/json',
    page: '3,000 characters (of string values)',
    make: (pages) =>
      Buffer.from(JSON.stringify({ title: 'Report', sections: pages.map((p, i) => ({ id: i + 1, paragraphs: paragraphs(p) })) }, null, 2), 'utf8'),
  },
];

function rowsOf(page: string): string[] {
  return wrap(page, ROW_CHARS).filter(Boolean);
}

/** What phase (a) needs of bench/knowledge.ts's HTTP client and database connection. */
export interface IngestionBenchContext {
  call: <T>(method: string, url: string, body?: unknown, as?: { token: string }) => Promise<T>;
  upload: (as: { token: string }, workspace: string, kb: string, name: string, contentType: string, bytes: Buffer) => Promise<string>;
  user: { token: string };
  query: <R>(text: string, values: unknown[]) => Promise<{ rows: R[] }>;
}

export interface IngestionRow {
  format: IngestionFormat;
  documents: number;
  pages: number;
  chunks: number;
  seconds: number;
  failed: number;
  extractSeconds: number;
  chunkSeconds: number;
  bytes: number;
}

export interface IngestionResult {
  rows: IngestionRow[];
  pagesPerDoc: number;
  load: string;
}

/**
 * Which formats run, and how many documents of each: `formats` is a comma-separated list of
 * format names (`pdf,docx,...`; empty: all), `documents(format)` the count (0 leaves it out).
 */
export function selectFormats(formats: string, documents: (format: DocumentFormat) => number): Array<{ format: IngestionFormat; count: number }> {
  const wanted = formats
    .split(',')
    .map((f) => f.trim().toLowerCase())
    .filter(Boolean);
  const unknown = wanted.filter((w) => !INGESTION_FORMATS.some((f) => f.format === w));
  if (unknown.length) throw new Error(`--formats: unknown ${unknown.join(', ')} (known: ${INGESTION_FORMATS.map((f) => f.format).join(', ')})`);
  return INGESTION_FORMATS.filter((f) => wanted.length === 0 || wanted.includes(f.format))
    .map((format) => ({ format, count: documents(format.format) }))
    .filter((f) => f.count > 0);
}

/**
 * Uploads `count` generated documents of `pagesPerDoc` pages per format (upload/ + signed PUT),
 * confirms them all at once and times until every one is ready or failed; one format at a time.
 * Also times `extractText` and `chunkDocument` alone on the first file of each format.
 */
export async function runIngestionPhase(
  context: IngestionBenchContext,
  plan: Array<{ format: IngestionFormat; count: number }>,
  pagesPerDoc: number,
  log: (line: string) => void,
): Promise<IngestionResult> {
  const { call, upload, user, query } = context;
  const workspace = (await call<{ id: string }>('POST', '/api/workspaces/', { name: 'Ingestion bench' }, user)).id;
  const kb = (await call<{ id: string }>('POST', `/api/workspaces/${workspace}/knowledge-bases/`, { name: 'Ingestion' }, user)).id;
  const rows: IngestionRow[] = [];
  for (const { format: kind, count } of plan) {
    log(`(a) ${count} ${kind.label} documents of ${pagesPerDoc} pages: generating and uploading...`);
    const files = Array.from({ length: count }, (_, d) => {
      const random = prng(1000 + d);
      return kind.make(Array.from({ length: pagesPerDoc }, () => prose(random, PAGE_CHARS, COMMON)));
    });
    // The pure steps alone, in this process, on the first file (the job does exactly these),
    // after one run on a small file of the same kind so module loading and JIT are not counted.
    const warm = await extractText({
      bytes: kind.make([prose(prng(1), PAGE_CHARS, COMMON), prose(prng(2), PAGE_CHARS, COMMON)]),
      contentType: kind.contentType,
      filename: `warm.${kind.ext}`,
    });
    if (warm.format !== kind.format) throw new Error(`a generated ${kind.label} file was read as ${warm.format}`);
    chunkDocument(warm);
    const e0 = performance.now();
    const extracted = await extractText({ bytes: files[0]!, contentType: kind.contentType, filename: `doc.${kind.ext}` });
    const e1 = performance.now();
    chunkDocument(extracted);
    const e2 = performance.now();
    const ids: string[] = [];
    for (let d = 0; d < files.length; d++) {
      ids.push(await upload(user, workspace, kb, `${kind.label.replace(' ', '-')}-${d}.${kind.ext}`, kind.contentType, files[d]!));
    }
    log(`(a) confirming ${ids.length} uploads and waiting for the queue to drain...`);
    const t0 = performance.now();
    for (const id of ids) await call('POST', `/api/workspaces/${workspace}/documents/${id}/confirm-upload/`, undefined, user);
    const deadline = Date.now() + 10 * 60_000;
    let statuses: Array<{ status: string; n: number }> = [];
    for (;;) {
      ({ rows: statuses } = await query<{ status: string; n: number }>(
        'SELECT processing_status AS status, count(*)::int AS n FROM documents WHERE id = ANY($1::uuid[]) GROUP BY 1',
        [ids],
      ));
      const finished = statuses.filter((s) => s.status === 'ready' || s.status === 'failed').reduce((a, s) => a + s.n, 0);
      if (finished === ids.length) break;
      if (Date.now() > deadline) throw new Error(`ingestion did not finish within 10 minutes: ${JSON.stringify(statuses)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - t0) / 1000;
    const { rows: counted } = await query<{ n: number }>('SELECT count(*)::int AS n FROM document_chunks WHERE document_id = ANY($1::uuid[])', [ids]);
    rows.push({
      format: kind,
      documents: count,
      pages: count * pagesPerDoc,
      chunks: counted[0]?.n ?? 0,
      seconds,
      failed: statuses.find((s) => s.status === 'failed')?.n ?? 0,
      extractSeconds: ((e1 - e0) / 1000) * count,
      chunkSeconds: ((e2 - e1) / 1000) * count,
      bytes: files.reduce((a, f) => a + f.length, 0),
    });
  }
  return { rows, pagesPerDoc, load: loadAverage() };
}

const MB = 1024 ** 2;

/** The per-format table (pages/s and MB/s through the whole path, and the pure steps alone). */
export function ingestionTable(result: IngestionResult): string[] {
  return [
    '| format | a page is | documents × pages | MB | chunks | wall time (s) | **pages/s** | **MB/s** | chunks/s | in-process extract only (pages/s) | in-process chunking only (pages/s) | failed |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...result.rows.map(
      (r) =>
        `| ${r.format.label} | ${r.format.page} | ${r.documents} × ${fmt(result.pagesPerDoc)} | ${fmt(r.bytes / MB, 2)} | ${fmt(r.chunks)} | ${fmt(r.seconds, 2)} | ` +
        `${fmt(r.pages / r.seconds, 1)} | ${fmt(r.bytes / MB / r.seconds, 2)} | ${fmt(r.chunks / r.seconds, 1)} | ` +
        `${fmt(r.pages / r.extractSeconds, 1)} | ${fmt(r.pages / r.chunkSeconds, 1)} | ${r.failed} |`,
    ),
  ];
}

/** The phase's section of bench/RESULTS.md. */
export function ingestionRecord(result: IngestionResult): string[] {
  return [
    `**(a) ingestion without embeddings** (load average ${result.load} after the phase): documents generated here, one "page" =`,
    `~${fmt(PAGE_CHARS)} characters of generated prose (sentences of ${COMMON_WORDS.length} common English words with Zipf frequencies, ~4.1`,
    'characters per cl100k token like ordinary English) in whatever unit the format has (the "a page is" column); files made',
    'by the test builders (test/support/document-files.ts, office-files.ts), zip formats deflated. Uploaded with',
    '`POST .../documents/upload/` + the signed PUT, then all of a format confirmed at once; wall time from the first',
    '`confirm-upload/` until every document is `ready` (extract + chunk + store in the job, chunks of ≤ 500 cl100k tokens',
    'with 60 overlap). MB are the files\' bytes (MiB). The last two columns time `extractText` and `chunkDocument` alone on',
    'one of the files, in the same process, single-threaded.',
    '',
    ...ingestionTable(result),
  ];
}
