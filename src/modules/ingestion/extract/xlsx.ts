/**
 * XLSX: one page per sheet (in workbook order; `page` is the sheet number), the sheet name on the
 * first line, then one line per row with the cells joined by " | ". Shared strings, inline strings,
 * booleans and errors are read as shown; numbers as stored, dates (a date number format on the
 * cell's style) as ISO dates. Formulas give their cached value. Read with the zip reader and a
 * streaming XML walk; no spreadsheet library.
 */
import { numberedPages } from './decode.js';
import { coreTitle, mainPart, partRelationships } from './ooxml.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';
import { relationshipId, walkXml } from './xml.js';
import { openZip, type ZipArchive } from './zip.js';

const CORRUPT = 'This Excel workbook could not be read. It may be damaged, password-protected or not an .xlsx file.';

/** Cells are joined with this; a row is one line. */
export const CELL_SEPARATOR = ' | ';

/** Column number (0-based) of a cell reference such as "C7". */
function columnOf(ref: string | undefined): number | undefined {
  const letters = /^[A-Z]+/i.exec(ref ?? '')?.[0];
  if (!letters) return undefined;
  let n = 0;
  for (const c of letters.toUpperCase()) n = n * 26 + (c.charCodeAt(0) - 64);
  return n - 1;
}

/** Rows as cell arrays → lines; leading columns empty in every row are dropped, gaps kept (up to a point). */
export function rowsToLines(rows: Array<Array<string | undefined>>): string[] {
  let first = Infinity;
  for (const row of rows) {
    const at = row.findIndex((cell) => cell !== undefined && cell !== '');
    if (at >= 0) first = Math.min(first, at);
  }
  if (first === Infinity) return [];
  return rows.map((row) => {
    const cells = row.slice(first).map((cell) => (cell ?? '').replace(/\s+/g, ' ').trim());
    while (cells.length > 0 && cells[cells.length - 1] === '') cells.pop();
    // A sparse row far to the right would be mostly separators: keep only its filled cells then.
    const filled = cells.filter(Boolean);
    return (cells.length > 64 && filled.length * 4 < cells.length ? filled : cells).join(CELL_SEPARATOR);
  }).filter((line) => line.replaceAll('|', '').trim() !== '');
}

const BUILTIN_DATE_FORMATS = new Set([14, 15, 16, 17, 18, 19, 20, 21, 22, 27, 30, 36, 45, 46, 47, 50, 57]);

function isDateFormat(code: string): boolean {
  const bare = code.replace(/"[^"]*"|\\.|\[[^\]]*\]|_.|\*./g, '');
  return /[dymhs]/i.test(bare);
}

/** For each cell style index (the cell's `s`), whether it formats numbers as dates. */
function dateStyles(xml: string | undefined): boolean[] {
  if (!xml) return [];
  const custom = new Map<number, string>();
  const styles: boolean[] = [];
  let inCellXfs = false;
  walkXml(xml, {
    open(name, attributes) {
      if (name === 'numFmt') custom.set(Number(attributes.numFmtId), attributes.formatCode ?? '');
      else if (name === 'cellXfs') inCellXfs = true;
      else if (name === 'xf' && inCellXfs) {
        const id = Number(attributes.numFmtId ?? 0);
        const code = custom.get(id);
        styles.push(code !== undefined ? isDateFormat(code) : BUILTIN_DATE_FORMATS.has(id));
      }
    },
    close(name) {
      if (name === 'cellXfs') inCellXfs = false;
    },
  });
  return styles;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** An Excel serial date (1900 or 1904 system) as ISO text: date, time, or both. */
export function excelDate(serial: number, date1904: boolean): string {
  const epoch = date1904 ? Date.UTC(1904, 0, 1) : Date.UTC(1899, 11, 30);
  const ms = Math.round(serial * 86_400_000);
  const d = new Date(epoch + ms);
  if (Number.isNaN(d.getTime())) return String(serial);
  const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const seconds = d.getUTCSeconds() ? `:${pad(d.getUTCSeconds())}` : '';
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}${seconds}`;
  if (serial < 1) return time;
  return Number.isInteger(serial) ? day : `${day} ${time}`;
}

function sharedStrings(xml: string | undefined): string[] {
  if (!xml) return [];
  const strings: string[] = [];
  let current: string | undefined;
  let inText = false;
  let phonetic = 0;
  walkXml(xml, {
    open(name) {
      if (name === 'si') current = '';
      else if (name === 't') inText = true;
      else if (name === 'rPh') phonetic++;
    },
    close(name) {
      if (name === 'si') {
        strings.push(current ?? '');
        current = undefined;
      } else if (name === 't') inText = false;
      else if (name === 'rPh') phonetic--;
    },
    text(text) {
      if (inText && phonetic === 0 && current !== undefined) current += text;
    },
  });
  return strings;
}

interface SheetContext {
  strings: string[];
  dates: boolean[];
  date1904: boolean;
  maxRows: number;
}

/** The rows of one worksheet part; `cut` when maxRows stopped it. */
function sheetRows(xml: string, context: SheetContext): { rows: Array<Array<string | undefined>>; cut: boolean } {
  const rows: Array<Array<string | undefined>> = [];
  let row: Array<string | undefined> | undefined;
  let cell: { column: number | undefined; type: string; style: number; value: string; inline: string } | undefined;
  let inValue = false;
  let inInline = 0;
  let inText = false;
  let cut = false;
  walkXml(xml, {
    open(name, attributes) {
      if (cut) return;
      if (name === 'row') row = [];
      else if (name === 'c' && row) {
        cell = { column: columnOf(attributes.r), type: attributes.t ?? 'n', style: Number(attributes.s ?? 0), value: '', inline: '' };
      } else if (name === 'v' && cell) inValue = true;
      else if (name === 'is' && cell) inInline++;
      else if (name === 't' && inInline) inText = true;
    },
    close(name) {
      if (cut) return;
      if (name === 'v') inValue = false;
      else if (name === 't') inText = false;
      else if (name === 'is') inInline--;
      else if (name === 'c' && cell && row) {
        const text = cellText(cell, context);
        row[cell.column ?? row.length] = text;
        cell = undefined;
      } else if (name === 'row' && row) {
        if (row.some((value) => value !== undefined && value !== '')) rows.push(row);
        row = undefined;
        if (rows.length >= context.maxRows) cut = true;
      }
    },
    text(text) {
      if (cut || !cell) return;
      if (inValue) cell.value += text;
      else if (inText) cell.inline += text;
    },
  });
  return { rows, cut };
}

function cellText(cell: { type: string; style: number; value: string; inline: string }, context: SheetContext): string {
  const value = cell.value.trim();
  switch (cell.type) {
    case 's':
      return context.strings[Number(value)] ?? '';
    case 'inlineStr':
      return cell.inline;
    case 'b':
      return value === '1' ? 'TRUE' : value === '0' ? 'FALSE' : value;
    case 'str':
    case 'e':
      return cell.value;
    default: {
      const number = Number(value);
      if (value !== '' && Number.isFinite(number) && context.dates[cell.style]) return excelDate(number, context.date1904);
      return value;
    }
  }
}

function workbookSheets(zip: ZipArchive, workbook: string): { sheets: Array<{ name: string; part: string | undefined }>; date1904: boolean } {
  const rels = partRelationships(zip, workbook);
  const sheets: Array<{ name: string; part: string | undefined }> = [];
  let date1904 = false;
  walkXml(zip.text(workbook) ?? '', {
    open(name, attributes) {
      if (name === 'sheet') sheets.push({ name: attributes.name ?? `Sheet ${sheets.length + 1}`, part: rels.get(relationshipId(attributes) ?? '')?.target });
      else if (name === 'workbookPr') date1904 = attributes.date1904 === '1' || attributes.date1904 === 'true';
    },
  });
  return { sheets, date1904 };
}

export function extractXlsx(bytes: Buffer, limits: ExtractionLimits): ExtractedDocument {
  const zip = openZip(bytes, limits, CORRUPT);
  const workbook = mainPart(zip, 'xl/workbook.xml');
  if (!zip.has(workbook)) throw new ExtractionError('corrupt_file', CORRUPT, `XLSX without a workbook part (${workbook})`);
  const { sheets, date1904 } = workbookSheets(zip, workbook);
  const rels = [...partRelationships(zip, workbook).values()];
  const partOf = (suffix: string) => rels.find((rel) => rel.type.endsWith(suffix))?.target;
  const strings = sharedStrings(zip.text(partOf('/sharedStrings') ?? 'xl/sharedStrings.xml'));
  const dates = dateStyles(zip.text(partOf('/styles') ?? 'xl/styles.xml'));
  let cut = false;
  const result = numberedPages(
    sheets.map(({ name, part }) => () => {
      const xml = part ? zip.text(part) : undefined;
      if (xml === undefined) return `Sheet: ${name}`; // a chart sheet or a missing part: the name only
      const { rows, cut: sheetCut } = sheetRows(xml, { strings, dates, date1904, maxRows: limits.maxSheetRows });
      if (sheetCut) cut = true;
      return [`Sheet: ${name}`, ...rowsToLines(rows)].join('\n');
    }),
    limits,
    { keepLines: true },
  );
  const title = coreTitle(zip);
  return { ...(title ? { title } : {}), pages: result.pages, ...(result.truncated || cut ? { truncated: true } : {}) };
}
