import { describe, expect, it } from 'vitest';
import {
  bombContent,
  buildEpub,
  buildOdp,
  buildOds,
  buildOdt,
  buildPptx,
  buildRtf,
  buildXlsx,
  buildZip,
  replaceEntries,
  type ZipFile,
} from '../../../test/support/office-files.js';
import { chunkDocument } from './chunk.js';
import { ExtractionError, extractText } from './extract/index.js';

/** XLSX, PPTX, ODT, ODS, ODP, EPUB and RTF: fixtures built here, extracted, and the archive limits. */

const TYPES = {
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odp: 'application/vnd.oasis.opendocument.presentation',
  epub: 'application/epub+zip',
  rtf: 'application/rtf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
} as const;

async function extractionError(promise: Promise<unknown>, code: string): Promise<ExtractionError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExtractionError);
  expect((error as ExtractionError).code).toBe(code);
  expect((error as ExtractionError).userMessage).not.toMatch(/zip|inflate|entry|undefined/i);
  return error as ExtractionError;
}

const SALES = [
  ['Region', 'Product', 'Units', 'Shipped', 'Paid'],
  ['North', 'Stainless steel whisk', 120, { date: 45292 }, true],
  ['South', 'Cast iron pan. Heavy duty', 75.5, { date: 45323.5 }, false],
];

describe('XLSX', () => {
  it('one page per sheet in workbook order, the sheet name first, one line per row with " | " between cells', async () => {
    for (const deflate of [false, true]) {
      const bytes = buildXlsx([{ name: 'Sales', rows: SALES }, { name: 'Notes & more', rows: [['Remember', null, 'the <milk>']] }], { title: 'Q1 figures', deflate });
      const doc = await extractText({ bytes, contentType: TYPES.xlsx, filename: 'q1.xlsx' });
      expect(doc).toMatchObject({ format: 'xlsx', title: 'Q1 figures' });
      expect(doc.truncated).toBeUndefined();
      expect(doc.pages).toEqual([
        {
          page: 1,
          keepLines: true,
          text:
            'Sheet: Sales\nRegion | Product | Units | Shipped | Paid\n' +
            'North | Stainless steel whisk | 120 | 2024-01-01 | TRUE\n' +
            'South | Cast iron pan. Heavy duty | 75.5 | 2024-02-01 12:00 | FALSE',
        },
        { page: 2, keepLines: true, text: 'Sheet: Notes & more\nRemember | | the <milk>' },
      ]);
    }
  });

  it('is recognised by its zip entries without a content type or name', async () => {
    const doc = await extractText({ bytes: buildXlsx([{ name: 'S', rows: [['a']] }], { deflate: true }), contentType: 'application/octet-stream' });
    expect(doc.format).toBe('xlsx');
  });

  it('chunks keep rows whole and never span sheets; the sheet number is the chunk page', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => [`Item ${i}. Sentence one.`, `Second cell of row ${i}. More text here!`, i]);
    const doc = await extractText({ bytes: buildXlsx([{ name: 'Big', rows }, { name: 'Small', rows: [['only row']] }]), contentType: TYPES.xlsx });
    const chunks = chunkDocument(doc, { maxTokens: 60, overlapTokens: 20 });
    expect(chunks.length).toBeGreaterThan(10);
    const rowLines = new Set(doc.pages[0]!.text.split('\n'));
    for (const chunk of chunks.filter((c) => c.page === 1)) {
      for (const line of chunk.content.split('\n')) expect(rowLines.has(line), line).toBe(true);
    }
    expect(chunks.at(-1)).toMatchObject({ page: 2, content: 'Sheet: Small\nonly row' });
    // Every row is found whole in some chunk.
    for (const line of rowLines) expect(chunks.some((c) => c.content.split('\n').includes(line))).toBe(true);
  });

  it('stops at maxSheetRows and maxPages (truncated)', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => [`row ${i}`]);
    const bytes = buildXlsx([{ name: 'A', rows }, { name: 'B', rows }, { name: 'C', rows }]);
    const doc = await extractText({ bytes, contentType: TYPES.xlsx }, { maxSheetRows: 10, maxPages: 2 });
    expect(doc.truncated).toBe(true);
    expect(doc.pages.map((p) => p.page)).toEqual([1, 2]);
    expect(doc.pages[0]!.text.split('\n')).toHaveLength(11);
  });

  it('a damaged workbook is corrupt_file', async () => {
    const error = await extractionError(extractText({ bytes: buildXlsx([{ name: 'S', rows: [['a']] }]).subarray(0, 300), contentType: TYPES.xlsx }), 'corrupt_file');
    expect(error.userMessage).toMatch(/Excel workbook could not be read/);
    await extractionError(extractText({ bytes: Buffer.from('not a zip'), contentType: '', filename: 'sheet.xlsx' }), 'corrupt_file');
  });
});

describe('PPTX', () => {
  it('one page per slide with its speaker notes; slide-number placeholders left out', async () => {
    const bytes = buildPptx(
      [
        { lines: ['Quarterly review', 'Revenue is up'], notes: ['Mention the new hires', 'Thank the team'] },
        { lines: ['Roadmap'] },
        { lines: ['Questions?'], notes: ['Keep it short'] },
      ],
      { title: 'Review deck', deflate: true },
    );
    const doc = await extractText({ bytes, contentType: TYPES.pptx, filename: 'deck.pptx' });
    expect(doc).toMatchObject({ format: 'pptx', title: 'Review deck' });
    expect(doc.pages).toEqual([
      { page: 1, text: 'Quarterly review\nRevenue is up\n\nNotes:\nMention the new hires\nThank the team' },
      { page: 2, text: 'Roadmap' },
      { page: 3, text: 'Questions?\n\nNotes:\nKeep it short' },
    ]);
    expect((await extractText({ bytes, contentType: '' })).format).toBe('pptx');
  });
});

describe('OpenDocument', () => {
  it('ODT: headings and paragraphs, table rows with " | ", comments left out', async () => {
    const bytes = buildOdt({ heading: 'Trip report', paragraphs: ['We visited the plant.', 'Output doubled & costs fell.'], table: [['City', 'Days'], ['Lyon', '3']] }, { deflate: true });
    const doc = await extractText({ bytes, contentType: TYPES.odt, filename: 'report.odt' });
    expect(doc).toMatchObject({ format: 'odt', title: 'Document' });
    expect(doc.pages).toEqual([{ page: null, text: 'Trip report\n\nWe visited the plant.\n\nOutput doubled & costs fell.\n\nCity | Days\nLyon | 3' }]);
    expect((await extractText({ bytes, contentType: 'application/zip' })).format).toBe('odt');
  });

  it('ODS: one page per sheet, rows as lines, the repeated empty grid ignored', async () => {
    const bytes = buildOds([
      { name: 'Stock', rows: [['Item', 'Count'], ['Whisk', '12'], ['', 'orphan']] },
      { name: 'Empty', rows: [] },
      { name: 'Prices', rows: [['Pan', '', '39.90']] },
    ]);
    const doc = await extractText({ bytes, contentType: TYPES.ods, filename: 'stock.ods' });
    expect(doc.format).toBe('ods');
    expect(doc.pages).toEqual([
      { page: 1, keepLines: true, text: 'Sheet: Stock\nItem | Count\nWhisk | 12\n| orphan' },
      { page: 2, keepLines: true, text: 'Sheet: Empty' },
      { page: 3, keepLines: true, text: 'Sheet: Prices\nPan | | 39.90' },
    ]);
  });

  it('ODP: one page per slide with its notes', async () => {
    const bytes = buildOdp([{ lines: ['Welcome', 'Agenda'], notes: ['Smile'] }, { lines: ['Thanks'] }], { deflate: true });
    const doc = await extractText({ bytes, contentType: '', filename: 'talk.odp' });
    expect(doc.format).toBe('odp');
    expect(doc.pages).toEqual([
      { page: 1, text: 'Welcome\nAgenda\n\nNotes:\nSmile' },
      { page: 2, text: 'Thanks' },
    ]);
  });
});

describe('OpenDocument with a password', () => {
  // As LibreOffice saves it: the parts are encrypted by ODF itself (not zip encryption), and the
  // manifest names the algorithm of each in <manifest:encryption-data>; content.xml is ciphertext.
  const encryptedManifest = (mimetype: string) =>
    '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">' +
    `<manifest:file-entry manifest:full-path="/" manifest:media-type="${mimetype}"/>` +
    '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml" manifest:size="1873">' +
    '<manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k" manifest:checksum="c2VjcmV0">' +
    '<manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc" manifest:initialisation-vector="aXY="/>' +
    '<manifest:start-key-generation manifest:start-key-generation-name="http://www.w3.org/2000/09/xmldsig#sha256" manifest:key-size="32"/>' +
    '<manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:key-size="32" manifest:iteration-count="100000" manifest:salt="c2FsdA=="/>' +
    '</manifest:encryption-data></manifest:file-entry></manifest:manifest>';
  const ciphertext = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 131 + 7) % 256));
  const locked: Array<[format: 'odt' | 'ods' | 'odp', bytes: Buffer]> = [
    ['odt', buildOdt({ heading: 'Secret', paragraphs: ['hidden'] })],
    ['ods', buildOds([{ name: 'S', rows: [['hidden']] }])],
    ['odp', buildOdp([{ lines: ['hidden'] }])],
  ];

  it.each(locked)('%s: refused as password_protected with a message that says so', async (format, plain) => {
    const bytes = replaceEntries(plain, {
      'META-INF/manifest.xml': { name: 'META-INF/manifest.xml', content: encryptedManifest(TYPES[format]) },
      'content.xml': { name: 'content.xml', content: ciphertext },
    });
    const error = await extractionError(extractText({ bytes, contentType: TYPES[format], filename: `locked.${format}` }), 'password_protected');
    expect(error.userMessage).toBe('This document is password-protected. Remove the password and upload it again.');
    // Recognised by its bytes too (the mimetype entry is never encrypted).
    await extractionError(extractText({ bytes, contentType: 'application/octet-stream' }), 'password_protected');
  });
});

describe('EPUB', () => {
  it('one page per chapter in spine order, the title from the package', async () => {
    const bytes = buildEpub(
      { title: 'The Baker', chapters: [{ heading: 'Flour', paragraphs: ['Choose strong flour.'] }, { heading: 'Water', paragraphs: ['Use it warm.', 'Not hot.'] }] },
      { deflate: true },
    );
    const doc = await extractText({ bytes, contentType: TYPES.epub, filename: 'baker.epub' });
    expect(doc).toMatchObject({ format: 'epub', title: 'The Baker' });
    expect(doc.pages).toEqual([
      { page: 1, text: 'Flour\n\nChoose strong flour.' },
      { page: 2, text: 'Water\n\nUse it warm.\n\nNot hot.' },
    ]);
    expect((await extractText({ bytes, contentType: '' })).format).toBe('epub');
  });

  it('a DRM-encrypted book is refused as password-protected', async () => {
    const bytes = buildEpub(
      { title: 'Locked', chapters: [{ heading: 'A', paragraphs: ['b'] }] },
      { extra: [{ name: 'META-INF/encryption.xml', content: '<encryption><EncryptedData/></encryption>' }] },
    );
    await extractionError(extractText({ bytes, contentType: TYPES.epub }), 'password_protected');
  });
});

describe('RTF', () => {
  it('plain text without the font, colour and info tables; escapes and Unicode decoded', async () => {
    const bytes = buildRtf(['Dear customer,', 'Your order of 3 caf\u00e9 cups {boxed} costs 12 \u20ac \\ net.', 'Regards \u2014 \u4e2d\u6587']);
    const doc = await extractText({ bytes, contentType: TYPES.rtf, filename: 'letter.rtf' });
    expect(doc.format).toBe('rtf');
    expect(doc.pages).toEqual([{ page: null, text: 'Dear customer,\nYour order of 3 caf\u00e9 cups {boxed} costs 12 \u20ac \\ net.\nRegards \u2014 \u4e2d\u6587' }]);
    expect((await extractText({ bytes, contentType: '' })).format).toBe('rtf');
    expect((await extractText({ bytes, contentType: 'text/plain', filename: 'letter' })).format).toBe('rtf');
  });
});

describe('archive limits (every zip-based format, one reader)', () => {
  const BOMB = bombContent(20 * 1024 * 1024); // 20 MiB of spaces, ~20 KiB deflated
  const families: Array<[family: string, type: string, build: (extra: ZipFile[]) => Buffer]> = [
    ['OOXML (xlsx)', TYPES.xlsx, (extra) => buildXlsx([{ name: 'S', rows: [['a']] }], { extra })],
    ['OOXML (pptx)', TYPES.pptx, (extra) => buildPptx([{ lines: ['a'] }], { extra })],
    ['ODF (ods)', TYPES.ods, (extra) => buildOds([{ name: 'S', rows: [['a']] }], { extra })],
    ['ODF (odt)', TYPES.odt, (extra) => buildOdt({ heading: 'h', paragraphs: ['p'] }, { extra })],
    ['EPUB', TYPES.epub, (extra) => buildEpub({ title: 't', chapters: [{ heading: 'h', paragraphs: ['p'] }] }, { extra })],
  ];

  it.each(families)('%s: a high-ratio entry (zip bomb) is refused before it is inflated', async (_family, type, build) => {
    const bytes = build([{ name: 'bomb.xml', content: BOMB, deflate: true }]);
    expect(bytes.length).toBeLessThan(200_000);
    const error = await extractionError(extractText({ bytes, contentType: type }), 'too_large');
    expect(error.message).toMatch(/ratio/);
  });

  it.each(families)('%s: too many entries, or too much uncompressed data in total', async (_family, type, build) => {
    const many = Array.from({ length: 50 }, (_, i): ZipFile => ({ name: `filler/${i}.xml`, content: 'x' }));
    const error = await extractionError(extractText({ bytes: build(many), contentType: type }, { maxZipEntries: 40 }), 'too_large');
    expect(error.message).toMatch(/entries/);
    const big = build([{ name: 'big.xml', content: Buffer.alloc(300_000, 'a'), deflate: false }]);
    expect((await extractionError(extractText({ bytes: big, contentType: type }, { maxZipUncompressedBytes: 200_000 }), 'too_large')).message).toMatch(/uncompressed/);
  });

  it('a part that inflates beyond the size its directory declares fails as too_large, never inflating further', async () => {
    const sheet = `<worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>${'a'.repeat(3 * 1024 * 1024)}</t></is></c></row></sheetData></worksheet>`;
    const lying = replaceEntries(buildXlsx([{ name: 'S', rows: [['a']] }]), {
      'xl/worksheets/sheet1.xml': { name: 'xl/worksheets/sheet1.xml', content: sheet, deflate: true, declaredSize: 1000 },
    });
    expect((await extractionError(extractText({ bytes: lying, contentType: TYPES.xlsx }), 'too_large')).message).toMatch(/beyond its declared/);
    const content = replaceEntries(buildOdt({ heading: 'h', paragraphs: ['p'] }), {
      'content.xml': { name: 'content.xml', content: bombContent(3 * 1024 * 1024), deflate: true, declaredSize: 1000 },
    });
    await extractionError(extractText({ bytes: content, contentType: TYPES.odt }), 'too_large');
    // DOCX: mammoth's JSZip would inflate it all; every entry is checked first.
    const docx = buildZip([
      { name: '[Content_Types].xml', content: '<Types/>' },
      { name: 'word/document.xml', content: bombContent(3 * 1024 * 1024), deflate: true, declaredSize: 500 },
    ]);
    await extractionError(extractText({ bytes: docx, contentType: TYPES.docx }), 'too_large');
  });

  it('DOCX goes through the same limits', async () => {
    const docx = buildZip([
      { name: '[Content_Types].xml', content: '<Types/>' },
      { name: 'word/document.xml', content: BOMB, deflate: true },
    ]);
    await extractionError(extractText({ bytes: docx, contentType: TYPES.docx }), 'too_large');
  });
});
