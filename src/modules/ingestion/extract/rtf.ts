/**
 * RTF: the plain text, one page. A small tokenizer: groups, control words and symbols, `\'hh`
 * bytes in the document's code page (`\ansicpgN`, Windows-1252 by default), `\uN` characters
 * with their `\ucN` fallbacks skipped, `\par`/`\line` as line breaks, table cells joined by " | ".
 * Destinations that are not body text are skipped: font, colour and style tables, document info,
 * pictures and objects, headers and footers, field instructions (field results are kept) and
 * every `\*` destination.
 */
import { decodeText, singlePage } from './decode.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';

const SKIPPED_DESTINATIONS = new Set([
  'fonttbl', 'colortbl', 'stylesheet', 'info', 'pict', 'object', 'objdata', 'header', 'headerl', 'headerr', 'headerf',
  'footer', 'footerl', 'footerr', 'footerf', 'fldinst', 'listtable', 'listoverridetable', 'revtbl', 'rsidtbl', 'xmlnstbl',
  'themedata', 'colorschememapping', 'datastore', 'latentstyles', 'pgdsctbl', 'filetbl', 'generator', 'private',
  'bkmkstart', 'bkmkend', 'xe', 'tc', 'tcn', 'nonshppict', 'shpinst', 'sp', 'sn', 'sv', 'template', 'userprops',
]);

const SYMBOLS: Record<string, string> = {
  par: '\n', line: '\n', sect: '\n\n', page: '\n\n', tab: '\t', cell: ' | ', nestcell: ' | ', row: '\n', nestrow: '\n',
  emdash: '\u2014', endash: '\u2013', bullet: '\u2022', lquote: '\u2018', rquote: '\u2019', ldblquote: '\u201c',
  rdblquote: '\u201d', emspace: ' ', enspace: ' ', qmspace: ' ',
};

export function isRtf(bytes: Buffer): boolean {
  return bytes.toString('latin1', 0, 6) === '{\\rtf1' || bytes.toString('latin1', 0, 5) === '{\\rtf';
}

export function rtfToText(rtf: string, maxChars = Infinity): string {
  let out = '';
  let codepage = 1252;
  let pending: number[] = []; // \'hh bytes waiting to be decoded together (multi-byte code pages)
  const flush = () => {
    if (pending.length === 0) return;
    const bytes = Buffer.from(pending);
    pending = [];
    const label = codepage === 65001 ? 'utf-8' : `windows-${codepage}`;
    out += decodeText(bytes, label);
  };
  interface State { skip: boolean; uc: number }
  const stack: State[] = [];
  let state: State = { skip: false, uc: 1 };
  let skipChars = 0; // fallback characters still to skip after \uN
  let i = 0;
  let groupStart = false; // just after "{": a \* or destination word decides whether the group is skipped
  const emit = (text: string) => {
    if (state.skip) return;
    if (skipChars > 0) {
      const dropped = Math.min(skipChars, text.length);
      skipChars -= dropped;
      text = text.slice(dropped);
    }
    if (!text) return;
    flush();
    out += text;
  };
  while (i < rtf.length && out.length < maxChars) {
    const c = rtf[i]!;
    if (c === '{') {
      stack.push(state);
      state = { ...state };
      groupStart = true;
      i++;
      continue;
    }
    if (c === '}') {
      flush();
      state = stack.pop() ?? state;
      groupStart = false;
      i++;
      continue;
    }
    if (c === '\\') {
      const next = rtf[i + 1] ?? '';
      if (/[a-z]/i.test(next)) {
        const match = /^\\([a-z]{1,32})(-?\d{1,10})? ?/i.exec(rtf.slice(i, i + 48))!;
        i += match[0].length;
        const word = match[1]!;
        const param = match[2] === undefined ? undefined : Number(match[2]);
        const atGroupStart = groupStart;
        groupStart = false;
        if (atGroupStart && SKIPPED_DESTINATIONS.has(word)) {
          state.skip = true;
          continue;
        }
        if (word === 'bin') {
          i += Math.max(0, param ?? 0);
          continue;
        }
        if (state.skip) continue;
        if (word === 'ansicpg' && param) codepage = param;
        else if (word === 'uc') state.uc = Math.max(0, param ?? 1);
        else if (word === 'u' && param !== undefined) {
          skipChars = 0;
          flush();
          out += String.fromCharCode(param < 0 ? param + 65536 : param);
          skipChars = state.uc;
        } else if (SYMBOLS[word] !== undefined) {
          skipChars = 0;
          emit(SYMBOLS[word]);
        }
        continue;
      }
      groupStart = next === '*' ? groupStart : false;
      if (next === '*') {
        state.skip = true; // an ignorable destination
        i += 2;
        continue;
      }
      if (next === "'") {
        const hex = rtf.slice(i + 2, i + 4);
        i += 4;
        if (state.skip) continue;
        if (skipChars > 0) {
          skipChars--;
          continue;
        }
        const byte = Number.parseInt(hex, 16);
        if (!Number.isNaN(byte)) pending.push(byte);
        continue;
      }
      i += 2;
      if (next === '~') emit('\u00a0');
      else if (next === '_') emit('\u2011');
      else if (next === '-') continue; // optional hyphen
      else if (next === '\n' || next === '\r') emit('\n');
      else if (next === '\\' || next === '{' || next === '}') emit(next);
      continue;
    }
    groupStart = false;
    i++;
    if (c === '\n' || c === '\r') continue; // line breaks in the source are not text
    emit(c);
  }
  flush();
  return out;
}

export function extractRtf(bytes: Buffer, limits: ExtractionLimits): ExtractedDocument {
  if (!isRtf(bytes)) {
    throw new ExtractionError('corrupt_file', 'This RTF document could not be read. It may be damaged or not an .rtf file.', 'no {\\rtf header');
  }
  const cut = bytes.length > limits.maxTextBytes;
  const text = rtfToText(bytes.toString('latin1', 0, Math.min(bytes.length, limits.maxTextBytes)), limits.maxChars * 2);
  return singlePage(text, limits, cut);
}
