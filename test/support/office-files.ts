import { crc32, deflateRawSync } from 'node:zlib';

/*
 * Builders for the zip-based document fixtures (XLSX, PPTX, ODT, ODS, ODP, EPUB) and RTF, made in
 * the tests instead of committed: minimal but valid files, plus zip bombs for the archive limits.
 */

export interface ZipFile {
  name: string;
  content: string | Buffer;
  /** Deflate this entry (default: stored). */
  deflate?: boolean;
  /** Uncompressed size written to the headers instead of the real one (a lying archive). */
  declaredSize?: number;
}

/** A zip with fixed 1980-01-01 timestamps; entries stored unless `deflate` is set. */
export function buildZip(files: Array<ZipFile | [name: string, content: string]>, deflateAll = false): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const file of files) {
    const { name, content, deflate = deflateAll, declaredSize } = Array.isArray(file) ? { name: file[0], content: file[1] } : file;
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8');
    const packed = deflate ? deflateRawSync(data) : data;
    const method = deflate ? 8 : 0;
    const size = declaredSize ?? data.length;
    const fileName = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(0x21, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(fileName.length, 26);
    parts.push(local, fileName, packed);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(20, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(method, 10);
    entry.writeUInt16LE(0x21, 14);
    entry.writeUInt32LE(crc, 16);
    entry.writeUInt32LE(packed.length, 20);
    entry.writeUInt32LE(size, 24);
    entry.writeUInt16LE(fileName.length, 28);
    entry.writeUInt32LE(offset, 42);
    central.push(entry, fileName);
    offset += local.length + fileName.length + packed.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
}

const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>';
const esc = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const rels = (items: Array<[id: string, type: string, target: string]>) =>
  `${XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  items.map(([id, type, target]) => `<Relationship Id="${id}" Type="${REL}/${type}" Target="${target}"/>`).join('') +
  '</Relationships>';
const contentTypes = (overrides: Array<[part: string, type: string]>) =>
  `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  overrides.map(([part, type]) => `<Override PartName="${part}" ContentType="${type}"/>`).join('') +
  '</Types>';
const coreProps = (title: string) =>
  `${XML}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
  `xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>${esc(title)}</dc:title></cp:coreProperties>`;

/** Re-zips a stored zip made by buildZip, with some entries replaced (by name). */
export function replaceEntries(zip: Buffer, replace: Record<string, ZipFile>): Buffer {
  const files: ZipFile[] = [];
  let at = 0;
  while (zip.readUInt32LE(at) === 0x04034b50) {
    const size = zip.readUInt32LE(at + 18);
    const nameLength = zip.readUInt16LE(at + 26);
    const name = zip.toString('utf8', at + 30, at + 30 + nameLength);
    files.push(replace[name] ?? { name, content: zip.subarray(at + 30 + nameLength, at + 30 + nameLength + size) });
    at += 30 + nameLength + size;
  }
  return buildZip(files);
}

/** A cell value: a string (shared string), a number, a boolean or { date: serial }. */
export type Cell = string | number | boolean | { date: number } | null;

const columnName = (index: number) => {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
};

/** An .xlsx: one worksheet per sheet, strings shared, dates with a date style (s="1"). */
export function buildXlsx(sheets: Array<{ name: string; rows: Cell[][] }>, options: { title?: string; deflate?: boolean; extra?: ZipFile[] } = {}): Buffer {
  const strings: string[] = [];
  const stringIndex = (text: string) => {
    const at = strings.indexOf(text);
    return at >= 0 ? at : strings.push(text) - 1;
  };
  const sheetXml = (rows: Cell[][]) =>
    `${XML}<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` +
    rows
      .map((row, r) => {
        const cells = row
          .map((cell, c) => {
            const ref = `${columnName(c)}${r + 1}`;
            if (cell === null) return '';
            if (typeof cell === 'string') return `<c r="${ref}" t="s"><v>${stringIndex(cell)}</v></c>`;
            if (typeof cell === 'boolean') return `<c r="${ref}" t="b"><v>${cell ? 1 : 0}</v></c>`;
            if (typeof cell === 'number') return `<c r="${ref}"><v>${cell}</v></c>`;
            return `<c r="${ref}" s="1"><v>${cell.date}</v></c>`;
          })
          .join('');
        return `<row r="${r + 1}">${cells}</row>`;
      })
      .join('') +
    '</sheetData></worksheet>';
  const worksheets = sheets.map((sheet, i) => ({ name: `xl/worksheets/sheet${i + 1}.xml`, content: sheetXml(sheet.rows) }));
  const shared =
    `${XML}<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${strings.length}">` +
    strings.map((s) => `<si><t xml:space="preserve">${esc(s)}</t></si>`).join('') +
    '</sst>';
  const files: ZipFile[] = [
    {
      name: '[Content_Types].xml',
      content: contentTypes([
        ['/xl/workbook.xml', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml'],
        ...sheets.map((_, i): [string, string] => [`/xl/worksheets/sheet${i + 1}.xml`, 'application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml']),
      ]),
    },
    { name: '_rels/.rels', content: rels([['rId1', 'officeDocument', 'xl/workbook.xml'], ['rId2', 'metadata/core-properties', 'docProps/core.xml']]) },
    { name: 'docProps/core.xml', content: coreProps(options.title ?? 'Workbook') },
    {
      name: 'xl/workbook.xml',
      content:
        `${XML}<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="${REL}"><sheets>` +
        sheets.map((sheet, i) => `<sheet name="${esc(sheet.name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('') +
        '</sheets></workbook>',
    },
    {
      name: 'xl/_rels/workbook.xml.rels',
      content: rels([
        ...sheets.map((_, i): [string, string, string] => [`rId${i + 1}`, 'worksheet', `worksheets/sheet${i + 1}.xml`]),
        ['rIdS', 'sharedStrings', 'sharedStrings.xml'],
        ['rIdT', 'styles', 'styles.xml'],
      ]),
    },
    {
      name: 'xl/styles.xml',
      content:
        `${XML}<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
        '<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>',
    },
    ...worksheets,
    { name: 'xl/sharedStrings.xml', content: shared },
    ...(options.extra ?? []),
  ];
  return buildZip(files.map((file) => ({ deflate: options.deflate, ...file })));
}

const drawingParagraphs = (lines: string[]) => lines.map((line) => `<a:p><a:r><a:t>${esc(line)}</a:t></a:r></a:p>`).join('');
const shape = (lines: string[], placeholder?: string) =>
  `<p:sp><p:nvSpPr><p:cNvPr id="2" name="Shape"/><p:cNvSpPr/><p:nvPr>${placeholder ? `<p:ph type="${placeholder}"/>` : ''}</p:nvPr></p:nvSpPr>` +
  `<p:txBody><a:bodyPr/>${drawingParagraphs(lines)}</p:txBody></p:sp>`;
const NS_P = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';

/** A .pptx: one slide per entry (its lines in one shape, a slide-number placeholder), notes when given. */
export function buildPptx(slides: Array<{ lines: string[]; notes?: string[] }>, options: { title?: string; deflate?: boolean; extra?: ZipFile[] } = {}): Buffer {
  const files: ZipFile[] = [
    {
      name: '[Content_Types].xml',
      content: contentTypes([['/ppt/presentation.xml', 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml']]),
    },
    { name: '_rels/.rels', content: rels([['rId1', 'officeDocument', 'ppt/presentation.xml'], ['rId2', 'metadata/core-properties', 'docProps/core.xml']]) },
    { name: 'docProps/core.xml', content: coreProps(options.title ?? 'Deck') },
    {
      name: 'ppt/presentation.xml',
      content:
        `${XML}<p:presentation ${NS_P} xmlns:r="${REL}"><p:sldIdLst>` +
        slides.map((_, i) => `<p:sldId id="${256 + i}" r:id="rId${i + 1}"/>`).join('') +
        '</p:sldIdLst></p:presentation>',
    },
    { name: 'ppt/_rels/presentation.xml.rels', content: rels(slides.map((_, i) => [`rId${i + 1}`, 'slide', `slides/slide${i + 1}.xml`])) },
  ];
  slides.forEach((slide, i) => {
    const n = i + 1;
    files.push({
      name: `ppt/slides/slide${n}.xml`,
      content: `${XML}<p:sld ${NS_P}><p:cSld><p:spTree>${shape(slide.lines)}${shape([String(n)], 'sldNum')}</p:spTree></p:cSld></p:sld>`,
    });
    if (slide.notes) {
      files.push(
        { name: `ppt/slides/_rels/slide${n}.xml.rels`, content: rels([['rId1', 'notesSlide', `../notesSlides/notesSlide${n}.xml`]]) },
        {
          name: `ppt/notesSlides/notesSlide${n}.xml`,
          content: `${XML}<p:notes ${NS_P}><p:cSld><p:spTree>${shape([], 'sldImg')}${shape(slide.notes, 'body')}${shape([String(n)], 'sldNum')}</p:spTree></p:cSld></p:notes>`,
        },
      );
    }
  });
  files.push(...(options.extra ?? []));
  return buildZip(files.map((file) => ({ deflate: options.deflate, ...file })));
}

const ODF_NS =
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ' +
  'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" ' +
  'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/" ' +
  'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" office:version="1.3"';

function buildOdf(mimetype: string, body: string, options: { title?: string; deflate?: boolean; extra?: ZipFile[] } = {}): Buffer {
  return buildZip([
    { name: 'mimetype', content: mimetype },
    {
      name: 'META-INF/manifest.xml',
      content:
        `${XML}<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">` +
        `<manifest:file-entry manifest:full-path="/" manifest:media-type="${mimetype}"/>` +
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>',
      deflate: options.deflate,
    },
    { name: 'meta.xml', content: `${XML}<office:document-meta ${ODF_NS}><office:meta><dc:title>${esc(options.title ?? 'Document')}</dc:title></office:meta></office:document-meta>`, deflate: options.deflate },
    { name: 'content.xml', content: `${XML}<office:document-content ${ODF_NS}><office:body>${body}</office:body></office:document-content>`, deflate: options.deflate },
    ...(options.extra ?? []),
  ]);
}

const odfParagraph = (text: string) => `<text:p>${esc(text)}</text:p>`;

/** An .odt: a heading, paragraphs, an optional table and a comment that must not be read. */
export function buildOdt(content: { heading: string; paragraphs: string[]; table?: string[][] }, options: { deflate?: boolean; extra?: ZipFile[] } = {}): Buffer {
  const table = content.table
    ? `<table:table table:name="T1">${content.table.map((row) => `<table:table-row>${row.map((cell) => `<table:table-cell>${odfParagraph(cell)}</table:table-cell>`).join('')}</table:table-row>`).join('')}</table:table>`
    : '';
  return buildOdf(
    'application/vnd.oasis.opendocument.text',
    `<office:text><text:h text:outline-level="1">${esc(content.heading)}</text:h>` +
      content.paragraphs.map((p, i) => (i === 0 ? `<text:p>${esc(p)}<office:annotation><text:p>COMMENT_TEXT</text:p></office:annotation></text:p>` : odfParagraph(p))).join('') +
      `${table}</office:text>`,
    options,
  );
}

/** An .ods: one table per sheet; each sheet ends with the huge repeated empty rows spreadsheets write. */
export function buildOds(sheets: Array<{ name: string; rows: string[][] }>, options: { deflate?: boolean; extra?: ZipFile[] } = {}): Buffer {
  const body = sheets
    .map(
      (sheet) =>
        `<table:table table:name="${esc(sheet.name)}">` +
        sheet.rows
          .map(
            (row) =>
              `<table:table-row>${row.map((cell) => (cell ? `<table:table-cell office:value-type="string">${odfParagraph(cell)}</table:table-cell>` : '<table:table-cell/>')).join('')}` +
              '<table:table-cell table:number-columns-repeated="16000"/></table:table-row>',
          )
          .join('') +
        '<table:table-row table:number-rows-repeated="1048000"><table:table-cell table:number-columns-repeated="16384"/></table:table-row></table:table>',
    )
    .join('');
  return buildOdf('application/vnd.oasis.opendocument.spreadsheet', `<office:spreadsheet>${body}</office:spreadsheet>`, options);
}

/** An .odp: one draw:page per slide, its lines in a text box, notes in presentation:notes. */
export function buildOdp(slides: Array<{ lines: string[]; notes?: string[] }>, options: { deflate?: boolean; extra?: ZipFile[] } = {}): Buffer {
  const frame = (lines: string[]) => `<draw:frame><draw:text-box>${lines.map(odfParagraph).join('')}</draw:text-box></draw:frame>`;
  const body = slides
    .map(
      (slide, i) =>
        `<draw:page draw:name="page${i + 1}">${frame(slide.lines)}` +
        (slide.notes ? `<presentation:notes><draw:page-thumbnail/>${frame(slide.notes)}</presentation:notes>` : '') +
        '</draw:page>',
    )
    .join('');
  return buildOdf('application/vnd.oasis.opendocument.presentation', `<office:presentation>${body}</office:presentation>`, options);
}

/** An .epub (EPUB 3): chapters in a spine whose order differs from the manifest's. */
export function buildEpub(book: { title: string; chapters: Array<{ heading: string; paragraphs: string[] }> }, options: { deflate?: boolean; extra?: ZipFile[] } = {}): Buffer {
  const chapterFiles = book.chapters.map((chapter, i) => ({
    name: `OEBPS/text/chapter ${i + 1}.xhtml`,
    content:
      `${XML}<!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><title>${esc(chapter.heading)}</title><style>p{margin:0}</style></head>` +
      `<body><h1>${esc(chapter.heading)}</h1>${chapter.paragraphs.map((p) => `<p>${esc(p)}</p>`).join('')}</body></html>`,
    deflate: options.deflate,
  }));
  const manifest = [...book.chapters.keys()]
    .reverse()
    .map((i) => `<item id="c${i + 1}" href="text/chapter%20${i + 1}.xhtml" media-type="application/xhtml+xml"/>`)
    .join('');
  return buildZip([
    { name: 'mimetype', content: 'application/epub+zip' },
    {
      name: 'META-INF/container.xml',
      content:
        `${XML}<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>` +
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
      deflate: options.deflate,
    },
    {
      name: 'OEBPS/content.opf',
      content:
        `${XML}<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">` +
        `<dc:identifier id="id">urn:uuid:0</dc:identifier><dc:title>${esc(book.title)}</dc:title><dc:language>en</dc:language></metadata>` +
        `<manifest><item id="css" href="style.css" media-type="text/css"/>${manifest}</manifest>` +
        `<spine>${book.chapters.map((_, i) => `<itemref idref="c${i + 1}"/>`).join('')}</spine></package>`,
      deflate: options.deflate,
    },
    { name: 'OEBPS/style.css', content: 'p { margin: 0 }' },
    ...chapterFiles,
    ...(options.extra ?? []),
  ]);
}

/** An .rtf: a font table, colour table and info group (not text), paragraphs, escapes and Unicode. */
export function buildRtf(paragraphs: string[]): Buffer {
  const escape = (text: string) =>
    [...text]
      .map((c) => {
        const code = c.codePointAt(0)!;
        if (c === '\\' || c === '{' || c === '}') return `\\${c}`;
        if (code > 0xff) return `\\u${code > 0x7fff ? code - 65536 : code}?`;
        if (code > 0x7f) return `\\'${code.toString(16)}`;
        return c;
      })
      .join('');
  return Buffer.from(
    '{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss Helvetica;}}{\\colortbl;\\red255\\green0\\blue0;}' +
      '{\\info{\\title FONT_TABLE_TITLE}{\\author Someone}}{\\*\\generator Test 1.0;}\\viewkind4\\uc1\n' +
      paragraphs.map((p) => `\\pard\\f0\\fs24 ${escape(p)}\\par\n`).join('') +
      '}',
    'latin1',
  );
}

/** `size` bytes of one repeated character, deflated (about 1,000:1). */
export function bombContent(size: number): Buffer {
  return Buffer.alloc(size, 0x20);
}
