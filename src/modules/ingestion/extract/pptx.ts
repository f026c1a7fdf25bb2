/**
 * PPTX: one page per slide in presentation order (`page` is the slide number, hidden slides
 * included so the numbers match PowerPoint's), the slide's text — one line per paragraph, table
 * cells joined by " | " — then "Notes:" and the speaker notes. Slide numbers, dates, footers and
 * headers placeholders are left out.
 */
import { numberedPages } from './decode.js';
import { coreTitle, mainPart, partRelationships } from './ooxml.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';
import { relationshipId, walkXml } from './xml.js';
import { openZip } from './zip.js';

const CORRUPT = 'This PowerPoint presentation could not be read. It may be damaged, password-protected or not a .pptx file.';

const SKIPPED_PLACEHOLDERS = new Set(['sldNum', 'dt', 'ftr', 'hdr', 'sldImg']);

/** The text of a slide or notes part. */
export function drawingText(xml: string): string {
  const out: string[] = [];
  let shape: { lines: string[]; skipped: boolean } | undefined;
  let paragraph: string | undefined;
  let inText = false;
  let cell: string[] | undefined;
  let row: string[] | undefined;
  const emit = (line: string) => (cell ?? shape?.lines ?? out).push(line);
  walkXml(xml, {
    open(name, attributes) {
      if (name === 'sp') shape = { lines: [], skipped: false };
      else if (name === 'ph' && shape && SKIPPED_PLACEHOLDERS.has(attributes.type ?? '')) shape.skipped = true;
      else if (name === 'tr') row = [];
      else if (name === 'tc' && row) cell = [];
      else if (name === 'p') paragraph = '';
      else if (name === 't' && paragraph !== undefined) inText = true;
      else if (name === 'br' && paragraph !== undefined) paragraph += '\n';
      else if (name === 'tab' && paragraph !== undefined) paragraph += ' ';
    },
    close(name) {
      if (name === 't') inText = false;
      else if (name === 'p' && paragraph !== undefined) {
        if (paragraph.trim()) emit(paragraph);
        paragraph = undefined;
      } else if (name === 'tc' && cell && row) {
        row.push(cell.join(' ').replace(/\s+/g, ' '));
        cell = undefined;
      } else if (name === 'tr' && row) {
        if (row.some((value) => value.trim())) (shape?.lines ?? out).push(row.join(' | '));
        row = undefined;
      } else if (name === 'sp' && shape) {
        if (!shape.skipped) out.push(...shape.lines);
        shape = undefined;
      }
    },
    text(text) {
      if (inText && paragraph !== undefined) paragraph += text;
    },
  });
  return out.join('\n');
}

export function extractPptx(bytes: Buffer, limits: ExtractionLimits): ExtractedDocument {
  const zip = openZip(bytes, limits, CORRUPT);
  const presentation = mainPart(zip, 'ppt/presentation.xml');
  if (!zip.has(presentation)) throw new ExtractionError('corrupt_file', CORRUPT, `PPTX without a presentation part (${presentation})`);
  const rels = partRelationships(zip, presentation);
  const slides: string[] = [];
  walkXml(zip.text(presentation) ?? '', {
    open(name, attributes) {
      if (name !== 'sldId') return;
      const target = rels.get(relationshipId(attributes) ?? '')?.target;
      if (target) slides.push(target);
    },
  });
  const result = numberedPages(
    slides.map((slide) => () => {
      const xml = zip.text(slide);
      if (xml === undefined) return undefined;
      const notesPart = [...partRelationships(zip, slide).values()].find((rel) => rel.type.endsWith('/notesSlide'))?.target;
      const notesXml = notesPart ? zip.text(notesPart) : undefined;
      const notes = notesXml ? drawingText(notesXml) : '';
      const text = drawingText(xml);
      return notes.trim() ? `${text}\n\nNotes:\n${notes}` : text;
    }),
    limits,
  );
  const title = coreTitle(zip);
  return { ...(title ? { title } : {}), ...result };
}
