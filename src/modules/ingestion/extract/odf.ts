/**
 * OpenDocument (content.xml through the zip reader and a streaming XML walk):
 * - ODT: one page (`page: null`), paragraphs and headings separated by blank lines, table rows as
 *   lines with the cells joined by " | ".
 * - ODS: one page per sheet (`page` is the sheet number), the sheet name first, one line per row.
 *   Repeated rows and cells are expanded (at most 100 times each); the trailing empty ones that
 *   spreadsheets write to the end of the grid are dropped.
 * - ODP: one page per slide (`page` is the slide number), the slide's text, then "Notes:" and the
 *   speaker notes.
 * Comments (office:annotation), tracked deletions and image titles/descriptions are left out.
 */
import { numberedPages, singlePage } from './decode.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';
import { rowsToLines } from './xlsx.js';
import { attr, firstElementText, walkXml } from './xml.js';
import { openZip, type ZipArchive } from './zip.js';

export type OdfFormat = 'odt' | 'ods' | 'odp';

const CORRUPT: Record<OdfFormat, string> = {
  odt: 'This OpenDocument text could not be read. It may be damaged, password-protected or not an .odt file.',
  ods: 'This OpenDocument spreadsheet could not be read. It may be damaged, password-protected or not an .ods file.',
  odp: 'This OpenDocument presentation could not be read. It may be damaged, password-protected or not an .odp file.',
};

/** Elements whose text is never read. */
const SKIPPED = new Set(['annotation', 'tracked-changes', 'title', 'desc', 'page-thumbnail']);
const MAX_REPEAT = 100;

/** Paragraph-level text with ODF's space, tab and line-break elements; skipped elements ignored. */
class TextCollector {
  private skip = 0;
  private paragraph: string | undefined;
  private depth = 0;

  open(name: string, attributes: Record<string, string>): void {
    if (SKIPPED.has(name) || this.skip > 0) {
      this.skip++;
      return;
    }
    if (name === 'p' || name === 'h') {
      if (this.paragraph === undefined) this.paragraph = '';
      this.depth++;
    } else if (this.paragraph !== undefined) {
      if (name === 's') this.paragraph += ' '.repeat(Math.min(Number(attr(attributes, 'c') ?? 1) || 1, 100));
      else if (name === 'tab') this.paragraph += '\t';
      else if (name === 'line-break') this.paragraph += '\n';
    }
  }

  /** The paragraph's text when `name` closes one, else undefined. */
  close(name: string): string | undefined {
    if (this.skip > 0) {
      this.skip--;
      return undefined;
    }
    if ((name === 'p' || name === 'h') && this.paragraph !== undefined && --this.depth === 0) {
      const text = this.paragraph;
      this.paragraph = undefined;
      return text;
    }
    return undefined;
  }

  text(text: string): void {
    if (this.skip === 0 && this.paragraph !== undefined) this.paragraph += text;
  }
}

function odtText(xml: string): string {
  const out: string[] = [];
  const collector = new TextCollector();
  let cell: string[] | undefined;
  let row: string[] | undefined;
  let tables = 0;
  walkXml(xml, {
    open(name, attributes) {
      collector.open(name, attributes);
      if (name === 'table') tables++;
      else if (name === 'table-row' && tables === 1) row = [];
      else if ((name === 'table-cell' || name === 'covered-table-cell') && row && tables === 1) cell = [];
    },
    close(name) {
      const paragraph = collector.close(name);
      if (paragraph !== undefined) {
        if (cell) cell.push(paragraph);
        else if (paragraph.trim()) out.push(paragraph, '');
      }
      if (name === 'table') {
        tables--;
        if (tables === 0) out.push('');
      } else if ((name === 'table-cell' || name === 'covered-table-cell') && cell && row && tables === 1) {
        row.push(cell.join(' ').replace(/\s+/g, ' '));
        cell = undefined;
      } else if (name === 'table-row' && row && tables === 1) {
        while (row.length > 0 && !row[row.length - 1]!.trim()) row.pop();
        if (row.length > 0) out.push(row.join(' | '));
        row = undefined;
      }
    },
    text: (text) => collector.text(text),
  });
  return out.join('\n');
}

function odsSheets(xml: string, maxRows: number): { sheets: Array<{ name: string; rows: Array<Array<string | undefined>> }>; cut: boolean } {
  const sheets: Array<{ name: string; rows: Array<Array<string | undefined>> }> = [];
  const collector = new TextCollector();
  let sheet: { name: string; rows: Array<Array<string | undefined>> } | undefined;
  let row: { cells: Array<string | undefined>; repeat: number } | undefined;
  let cell: { parts: string[]; repeat: number } | undefined;
  let nested = 0; // tables inside a cell (rare): their text joins the cell
  let cut = false;
  walkXml(xml, {
    open(name, attributes) {
      collector.open(name, attributes);
      if (name === 'table') {
        if (sheet && cell) nested++;
        else if (!sheet) sheet = { name: attr(attributes, 'name') ?? `Sheet ${sheets.length + 1}`, rows: [] };
      } else if (nested === 0 && sheet && name === 'table-row') {
        row = { cells: [], repeat: Number(attr(attributes, 'number-rows-repeated') ?? 1) || 1 };
      } else if (nested === 0 && row && (name === 'table-cell' || name === 'covered-table-cell')) {
        cell = { parts: [], repeat: Number(attr(attributes, 'number-columns-repeated') ?? 1) || 1 };
      }
    },
    close(name) {
      const paragraph = collector.close(name);
      if (paragraph !== undefined && cell) cell.parts.push(paragraph);
      if (name === 'table') {
        if (nested > 0) nested--;
        else if (sheet) {
          sheets.push(sheet);
          sheet = undefined;
        }
      } else if (nested === 0 && cell && row && (name === 'table-cell' || name === 'covered-table-cell')) {
        const text = cell.parts.join(' ');
        // Empty repeated cells only matter as gaps before a later filled cell; they are trimmed at the end.
        const times = text ? Math.min(cell.repeat, MAX_REPEAT) : Math.min(cell.repeat, 1024);
        for (let i = 0; i < times; i++) row.cells.push(text);
        cell = undefined;
      } else if (nested === 0 && row && sheet && name === 'table-row') {
        while (row.cells.length > 0 && !row.cells[row.cells.length - 1]) row.cells.pop();
        if (row.cells.length > 0) {
          for (let i = 0; i < Math.min(row.repeat, MAX_REPEAT); i++) {
            if (sheet.rows.length >= maxRows) {
              cut = true;
              break;
            }
            sheet.rows.push(row.cells);
          }
        }
        row = undefined;
      }
    },
    text: (text) => collector.text(text),
  });
  return { sheets, cut };
}

function odpSlides(xml: string): string[] {
  const slides: string[] = [];
  const collector = new TextCollector();
  let slide: { lines: string[]; notes: string[] } | undefined;
  let inNotes = 0;
  walkXml(xml, {
    open(name, attributes) {
      collector.open(name, attributes);
      if (name === 'page' && !slide) slide = { lines: [], notes: [] };
      else if (name === 'notes' && slide) inNotes++;
    },
    close(name) {
      const paragraph = collector.close(name);
      if (paragraph !== undefined && slide && paragraph.trim()) (inNotes > 0 ? slide.notes : slide.lines).push(paragraph);
      if (name === 'notes' && inNotes > 0) inNotes--;
      else if (name === 'page' && slide && inNotes === 0) {
        const text = slide.lines.join('\n');
        slides.push(slide.notes.length > 0 ? `${text}\n\nNotes:\n${slide.notes.join('\n')}` : text);
        slide = undefined;
      }
    },
    text: (text) => collector.text(text),
  });
  return slides;
}

function contentOf(zip: ZipArchive, format: OdfFormat): string {
  const xml = zip.text('content.xml');
  if (xml === undefined) throw new ExtractionError('corrupt_file', CORRUPT[format], 'OpenDocument without content.xml');
  return xml;
}

export function extractOdf(bytes: Buffer, format: OdfFormat, limits: ExtractionLimits): ExtractedDocument {
  const zip = openZip(bytes, limits, CORRUPT[format]);
  if (zip.has('META-INF/manifest.xml') && zip.text('META-INF/manifest.xml')?.includes('encryption-data')) {
    throw new ExtractionError(
      'password_protected',
      'This document is password-protected. Remove the password and upload it again.',
      'OpenDocument with encrypted entries',
    );
  }
  const xml = contentOf(zip, format);
  const title = firstElementText(zip.text('meta.xml'), 'title');
  const withTitle = (doc: ExtractedDocument): ExtractedDocument => ({ ...(title ? { title } : {}), ...doc });
  if (format === 'odt') return withTitle(singlePage(odtText(xml), limits));
  if (format === 'odp') return withTitle(numberedPages(odpSlides(xml).map((text) => () => text), limits));
  const { sheets, cut } = odsSheets(xml, limits.maxSheetRows);
  return withTitle(
    numberedPages(
      sheets.map(({ name, rows }) => () => [`Sheet: ${name}`, ...rowsToLines(rows)].join('\n')),
      limits,
      { keepLines: true, truncated: cut },
    ),
  );
}
