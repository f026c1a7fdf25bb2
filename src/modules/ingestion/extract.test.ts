import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildDocx, buildPdf } from '../../../test/support/document-files.js';
import { buildZip } from '../../../test/support/office-files.js';
import { EXTRACTION_LIMITS, ExtractionError, extractText, normalizeWhitespace } from './extract/index.js';

const FIXTURES = new URL('../../../test/fixtures/documents/', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(name, FIXTURES));

// --- Builders for the binary fixtures (sample.pdf and sample.docx are their committed output) ---

const SAMPLE_PDF_PAGES = [
  ['Hello page one', 'The first page talks about apples.'],
  ['Hello page two', 'The second page talks about pears.'],
];

const SAMPLE_DOCX = { paragraphs: ['Quarterly report', 'Revenue grew by 12 percent in the third quarter.'], table: [['Region', 'Revenue'], ['North', '1.2M']] };

async function expectExtractionError(promise: Promise<unknown>, code: string): Promise<ExtractionError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExtractionError);
  const extraction = error as ExtractionError;
  expect(extraction.code).toBe(code);
  expect(extraction.userMessage.length).toBeGreaterThan(10);
  expect(extraction.name).toBe('ExtractionError');
  return extraction;
}

// ---------------------------------------------------------------------------------------------

describe('committed binary fixtures', () => {
  it('sample.pdf and sample.docx are the output of the builders in this file', () => {
    expect(fixture('sample.pdf').equals(buildPdf(SAMPLE_PDF_PAGES))).toBe(true);
    expect(fixture('sample.docx').equals(buildDocx(SAMPLE_DOCX.paragraphs, SAMPLE_DOCX.table))).toBe(true);
  });
});

describe('extractText: PDF', () => {
  it('extracts one entry per page with 1-based page numbers', async () => {
    const doc = await extractText({ bytes: fixture('sample.pdf'), contentType: 'application/pdf', filename: 'sample.pdf' });
    expect(doc.format).toBe('pdf');
    expect(doc.pages).toEqual([
      { page: 1, text: 'Hello page one\nThe first page talks about apples.' },
      { page: 2, text: 'Hello page two\nThe second page talks about pears.' },
    ]);
    expect(doc.truncated).toBeUndefined();
  });

  it('takes the title from the PDF metadata when there is one', async () => {
    const bytes = buildPdf([['Body text']], ' /Info 6 0 R', ['<< /Title (Annual Report 2024) >>']);
    const doc = await extractText({ bytes, contentType: 'application/pdf' });
    expect(doc.title).toBe('Annual Report 2024');
    expect(doc.pages).toEqual([{ page: 1, text: 'Body text' }]);
  });

  it('keeps empty pages (no text layer) as empty entries instead of failing', async () => {
    const doc = await extractText({ bytes: buildPdf([['Only page one'], []]), contentType: 'application/pdf' });
    expect(doc.pages).toEqual([
      { page: 1, text: 'Only page one' },
      { page: 2, text: '' },
    ]);
  });

  it('reads at most maxPages pages and marks the document truncated', async () => {
    const bytes = buildPdf([['one'], ['two'], ['three']]);
    const doc = await extractText({ bytes, contentType: 'application/pdf' }, { maxPages: 2 });
    expect(doc.pages.map((p) => p.page)).toEqual([1, 2]);
    expect(doc.truncated).toBe(true);
  });

  it('stops at maxChars across pages', async () => {
    const bytes = buildPdf([['aaaa bbbb cccc'], ['dddd eeee'], ['ffff']]);
    const doc = await extractText({ bytes, contentType: 'application/pdf' }, { maxChars: 20 });
    expect(doc.pages.map((p) => p.text).join('').length).toBeLessThanOrEqual(20);
    expect(doc.pages[0]!.text).toBe('aaaa bbbb cccc');
    expect(doc.truncated).toBe(true);
  });

  it('rejects a corrupt PDF with a message for the user', async () => {
    const error = await expectExtractionError(
      extractText({ bytes: Buffer.from('%PDF-1.4\nthis is not really a pdf'), contentType: 'application/pdf' }),
      'corrupt_file',
    );
    expect(error.userMessage).toBe('This PDF could not be read. It may be damaged or password-protected.');
    expect(error.message).toMatch(/PDF could not be opened/);
    expect(error.cause).toBeDefined();
  });

  it('rejects a truncated PDF and an empty file labelled as PDF', async () => {
    const half = fixture('sample.pdf').subarray(0, 200);
    await expectExtractionError(extractText({ bytes: half, contentType: 'application/pdf' }), 'corrupt_file');
    await expectExtractionError(extractText({ bytes: Buffer.alloc(0), contentType: 'application/pdf' }), 'corrupt_file');
  });

  it('tells the user when a PDF is password-protected', async () => {
    // Standard security handler with an owner/user hash that the empty password cannot open.
    const encrypt = `<< /Filter /Standard /V 1 /R 2 /O <${'A'.repeat(64)}> /U <${'B'.repeat(64)}> /P -4 >>`;
    const bytes = buildPdf([['secret']], ` /Encrypt 6 0 R /ID [<${'0'.repeat(32)}> <${'0'.repeat(32)}>]`, [encrypt]);
    const error = await expectExtractionError(extractText({ bytes, contentType: 'application/pdf' }), 'password_protected');
    expect(error.userMessage).toMatch(/password-protected/);
  });
});

describe('extractText: DOCX', () => {
  it('extracts the raw text of paragraphs and tables, without a page number', async () => {
    const doc = await extractText({
      bytes: fixture('sample.docx'),
      contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    });
    expect(doc.format).toBe('docx');
    expect(doc.pages).toEqual([
      {
        page: null,
        text: 'Quarterly report\n\nRevenue grew by 12 percent in the third quarter.\n\nRegion\n\nRevenue\n\nNorth\n\n1.2M',
      },
    ]);
  });

  it('reads deflate-compressed entries (as Word writes them) and escapes', async () => {
    const bytes = buildDocx(['Fish &amp; chips', 'Second   paragraph'], [], true);
    const doc = await extractText({ bytes, contentType: '', filename: 'menu.docx' });
    expect(doc.pages).toEqual([{ page: null, text: 'Fish & chips\n\nSecond paragraph' }]);
  });

  it('rejects a corrupt DOCX with a message for the user', async () => {
    const type = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
    const truncated = await expectExtractionError(
      extractText({ bytes: fixture('sample.docx').subarray(0, 120), contentType: type }),
      'corrupt_file',
    );
    expect(truncated.userMessage).toMatch(/Word document could not be read/);
    // A valid zip without word/document.xml.
    await expectExtractionError(extractText({ bytes: buildZip([['notes.txt', 'hello']]), contentType: type }), 'corrupt_file');
    await expectExtractionError(extractText({ bytes: Buffer.from('plain words'), contentType: type, filename: 'x.docx' }), 'corrupt_file');
  });
});

describe('extractText: HTML', () => {
  it('keeps the article, drops navigation, sidebars, footers, scripts and styles', async () => {
    const doc = await extractText({ bytes: fixture('article.html'), contentType: 'text/html; charset=utf-8' });
    expect(doc.format).toBe('html');
    expect(doc.title).toBe('How to Care for a Sourdough Starter');
    expect(doc.pages).toHaveLength(1);
    const { page, text } = doc.pages[0]!;
    expect(page).toBeNull();
    expect(text).toContain('A sourdough starter is a living culture of wild yeast and lactic acid bacteria.');
    expect(text).toContain('Storing the starter in the fridge');
    expect(text).toContain('Keep a spare portion dried on baking paper as a backup.');
    for (const clutter of ['Shop our flour', 'Sign in', 'Subscribe to our newsletter', 'All rights reserved', 'TRACKING_SCRIPT_TEXT', 'INLINE_SCRIPT_TEXT', 'font-family']) {
      expect(text).not.toContain(clutter);
    }
    // Block elements become paragraphs; source line wrapping inside a paragraph does not.
    expect(text).toContain('It needs regular feeding with flour and water to stay active');
    expect(text).toMatch(/\n\nStoring the starter in the fridge\n\n/);
    expect(text).toMatch(/chlorinated\.\nKeep a spare portion/);
  });

  it('falls back to the body text when Readability finds no article', async () => {
    const html = '<html><head><title>Tiny</title><style>p{}</style></head><body><p>Just one line.</p><script>alert(1)</script></body></html>';
    const doc = await extractText({ bytes: Buffer.from(html), contentType: 'text/html' });
    expect(doc.title).toBe('Tiny');
    expect(doc.pages).toEqual([{ page: null, text: 'Just one line.' }]);
  });

  it('handles fragments without html/body elements, tables and <br>', async () => {
    const html = '<h2>Prices</h2><table><tr><th>Item</th><th>Price</th></tr><tr><td>Tea</td> <td>3 &euro;</td></tr></table><p>Line one<br>Line two</p><script>hidden()</script>';
    const doc = await extractText({ bytes: Buffer.from(html), contentType: '', filename: 'prices.htm' });
    expect(doc.format).toBe('html');
    const text = doc.pages[0]!.text;
    expect(text).toContain('Item | Price\nTea | 3 €');
    expect(text).toContain('Line one\nLine two');
    expect(text).not.toContain('hidden()');
  });

  it('decodes the charset declared in a meta element', async () => {
    const html = Buffer.concat([
      Buffer.from('<html><head><meta charset="windows-1252"><title>Caf'),
      Buffer.from([0xe9]),
      Buffer.from('</title></head><body><p>Cr'),
      Buffer.from([0xe8]),
      Buffer.from('me br'),
      Buffer.from([0xfb]),
      Buffer.from('l'),
      Buffer.from([0xe9, 0x20, 0x80]),
      Buffer.from('5</p></body></html>'),
    ]);
    const doc = await extractText({ bytes: html, contentType: 'text/html' });
    expect(doc.title).toBe('Café');
    expect(doc.pages[0]!.text).toBe('Crème brûlé €5');
  });
});

describe('extractText: Markdown, text, CSV and JSON', () => {
  it('keeps Markdown as text and takes the title from the first heading', async () => {
    const doc = await extractText({ bytes: fixture('guide.md'), contentType: 'text/markdown' });
    expect(doc.format).toBe('markdown');
    expect(doc.title).toBe('Deployment Guide');
    const text = doc.pages[0]!.text;
    expect(text).toContain('# Deployment Guide\n\nThis guide explains how to **deploy** the service on a single machine.');
    expect(text).toContain('- Node.js 20 or newer\n- PostgreSQL 15 with the `pgvector` extension');
    expect(text).toContain('```sh\nnpm start\n```');
  });

  it('normalises plain text: whitespace collapsed, paragraph breaks kept', async () => {
    const doc = await extractText({ bytes: fixture('notes.txt'), contentType: 'text/plain' });
    expect(doc).toEqual({
      format: 'text',
      pages: [
        {
          page: null,
          text: 'Meeting notes\n\nThe quarterly review is scheduled for Tuesday.\nEveryone should bring the latest figures.\n\nAction items follow next week.',
        },
      ],
    });
  });

  it('strips the BOM, CRLF line endings and NUL characters', async () => {
    const bytes = Buffer.from('\ufeffFirst line\r\nSecond\u0000 line\r\n\r\n\r\nNext paragraph\r\n', 'utf8');
    const doc = await extractText({ bytes, contentType: 'text/plain; charset=utf-8' });
    expect(doc.pages).toEqual([{ page: null, text: 'First line\nSecond line\n\nNext paragraph' }]);
  });

  it('reads UTF-16 with a BOM, and falls back to Windows-1252 for bytes that are not UTF-8', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Grüße aus Köln', 'utf16le')]);
    expect((await extractText({ bytes: utf16, contentType: 'text/plain' })).pages[0]!.text).toBe('Grüße aus Köln');
    const latin = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x96, 0x20, 0x6f, 0x6b]);
    expect((await extractText({ bytes: latin, contentType: 'text/plain' })).pages[0]!.text).toBe('café – ok');
  });

  it('keeps CSV rows as lines', async () => {
    const doc = await extractText({ bytes: fixture('inventory.csv'), contentType: 'text/csv' });
    expect(doc.format).toBe('csv');
    expect(doc.pages[0]!.text).toBe(
      'sku,name,quantity,warehouse\nA-100,Stainless steel whisk,42,Berlin\nA-101,"Mixing bowl, large",7,Hamburg\nA-102,Rye flour 1kg,120,Berlin',
    );
  });

  it('keeps TSV cells apart', async () => {
    const doc = await extractText({ bytes: Buffer.from('a\tb c\n1\t2\n'), contentType: '', filename: 'x.tsv' });
    expect(doc.pages[0]!.text).toBe('a | b c\n1 | 2');
  });

  it('bounds huge CSV files and marks them truncated', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => `row-${i},value ${i}`).join('\n');
    const doc = await extractText({ bytes: Buffer.from(rows), contentType: 'text/csv' }, { maxChars: 10_000 });
    const text = doc.pages[0]!.text;
    expect(text.length).toBeLessThanOrEqual(10_000);
    expect(text.startsWith('row-0,value 0\nrow-1,value 1\n')).toBe(true);
    // Cut at a row boundary.
    expect(text.split('\n').every((line) => /^row-\d+,value \d+$/.test(line))).toBe(true);
    expect(doc.truncated).toBe(true);
    const byBytes = await extractText({ bytes: Buffer.from(rows), contentType: 'text/csv' }, { maxTextBytes: 1_000 });
    expect(byBytes.pages[0]!.text.length).toBeLessThanOrEqual(1_000);
    expect(byBytes.truncated).toBe(true);
  });

  it('flattens JSON to path: value lines', async () => {
    const doc = await extractText({ bytes: fixture('config.json'), contentType: 'application/json' });
    expect(doc.format).toBe('json');
    expect(doc.pages[0]!.text.split('\n')).toEqual([
      'service.name: search-api',
      'service.replicas: 3',
      'service.enabled: true',
      'service.owner: null',
      'regions[0].id: eu-central',
      'regions[0].primary: true',
      'regions[1].id: us-east',
      'regions[1].primary: false',
      'tags: []',
      '["feature flags"]["beta search"]: on',
    ]);
  });

  it('handles top-level scalars, empty containers and deep nesting', async () => {
    const read = async (json: string) => (await extractText({ bytes: Buffer.from(json), contentType: 'application/json' })).pages[0]!.text;
    expect(await read('"just a string"')).toBe('just a string');
    expect(await read('[]')).toBe('[]');
    expect(await read('[1, [2, 3]]')).toBe('[0]: 1\n[1][0]: 2\n[1][1]: 3');
    const deep = `${'['.repeat(5_000)}"bottom"${']'.repeat(5_000)}`;
    expect(await read(deep)).toMatch(/: bottom$/);
  });

  it('rejects invalid JSON with a message for the user', async () => {
    const error = await expectExtractionError(
      extractText({ bytes: Buffer.from('{"a": 1,,}'), contentType: 'application/json' }),
      'invalid_json',
    );
    expect(error.userMessage).toBe('This JSON file could not be read because it is not valid JSON.');
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });
});

describe('extractText: type detection', () => {
  it('sniffs PDF and DOCX bytes without a content type or file name', async () => {
    for (const contentType of ['', 'application/octet-stream']) {
      const pdf = await extractText({ bytes: fixture('sample.pdf'), contentType });
      expect(pdf.format).toBe('pdf');
      expect(pdf.pages[1]).toEqual({ page: 2, text: 'Hello page two\nThe second page talks about pears.' });
      const docx = await extractText({ bytes: fixture('sample.docx'), contentType });
      expect(docx.format).toBe('docx');
      expect(docx.pages[0]!.text).toMatch(/^Quarterly report/);
    }
  });

  it('sniffs HTML, JSON and plain text', async () => {
    const sniff = async (text: string) => (await extractText({ bytes: Buffer.from(text), contentType: '' })).format;
    expect(await sniff('  <!DOCTYPE html><html><body><p>Hi</p></body></html>')).toBe('html');
    expect(await sniff('{"a": 1}')).toBe('json');
    expect(await sniff('{not json, just braces}')).toBe('text');
    expect(await sniff('Just some words.')).toBe('text');
    // Legacy 8-bit text without any hint is still text; bytes with control characters are not.
    const latin = await extractText({ bytes: Buffer.from([0x4b, 0xf6, 0x6c, 0x6e, 0x0a, 0x4d, 0xfc, 0x6e, 0x63, 0x68, 0x65, 0x6e]), contentType: '' });
    expect(latin.pages[0]!.text).toBe('Köln\nMünchen');
    await expectExtractionError(extractText({ bytes: Buffer.from([0x01, 0x02, 0x03, 0x41, 0x42]), contentType: '' }), 'unsupported_type');
  });

  it('does not misread a large UTF-8 file whose first 64 KiB end inside a character', async () => {
    const text = `${'a'.repeat(64 * 1024 - 1)}é and more`;
    const doc = await extractText({ bytes: Buffer.from(text), contentType: '' });
    expect(doc.format).toBe('text');
    expect(doc.pages[0]!.text.endsWith('aé and more')).toBe(true);
  });

  it('uses the file extension when the content type is generic or text/plain', async () => {
    const csv = await extractText({ bytes: fixture('inventory.csv'), contentType: 'application/vnd.ms-excel', filename: 'inventory.csv' });
    expect(csv.format).toBe('csv');
    const json = await extractText({ bytes: fixture('config.json'), contentType: 'text/plain', filename: 'config.json' });
    expect(json.format).toBe('json');
    const md = await extractText({ bytes: fixture('guide.md'), contentType: 'application/octet-stream', filename: 'GUIDE.MD' });
    expect(md.format).toBe('markdown');
    const fromUrl = await extractText({ bytes: fixture('sample.pdf'), contentType: '', sourceUrl: 'https://example.com/files/report.pdf?x=1' });
    expect(fromUrl.format).toBe('pdf');
  });

  it('lets the content type win over the extension', async () => {
    const doc = await extractText({ bytes: Buffer.from('<p>tags stay</p>'), contentType: 'text/markdown', filename: 'page.html' });
    expect(doc.format).toBe('markdown');
    expect(doc.pages[0]!.text).toBe('<p>tags stay</p>');
  });

  it('rejects unsupported types with a message for the user', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]);
    const image = await expectExtractionError(extractText({ bytes: png, contentType: 'image/png' }), 'unsupported_type');
    expect(image.userMessage).toBe(
      'This file type (image/png) is not supported. Upload a PDF, Word (.docx), Excel (.xlsx), PowerPoint (.pptx), OpenDocument (.odt, .ods, .odp), EPUB, RTF, HTML, Markdown, plain text, CSV or JSON file.',
    );
    const unknown = await expectExtractionError(extractText({ bytes: png, contentType: '' }), 'unsupported_type');
    expect(unknown.userMessage).toBe('This file type is not supported. Upload a PDF, Word (.docx), Excel (.xlsx), PowerPoint (.pptx), OpenDocument (.odt, .ods, .odp), EPUB, RTF, HTML, Markdown, plain text, CSV or JSON file.');
    const doc = await expectExtractionError(
      extractText({ bytes: Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0]), contentType: 'application/msword' }),
      'unsupported_type',
    );
    expect(doc.userMessage).toMatch(/Save the document as \.docx or PDF/);
    await expectExtractionError(extractText({ bytes: Buffer.from('x'), contentType: '', filename: 'sheet.xls' }), 'unsupported_type');
    await expectExtractionError(extractText({ bytes: buildZip([['a.txt', 'a']]), contentType: 'application/zip' }), 'unsupported_type');
  });
});

describe('normalizeWhitespace', () => {
  it('collapses spaces, keeps single line breaks and at most one blank line', () => {
    expect(normalizeWhitespace('  a \t\u00a0 b  \n\n\n\n c\u00ad\u200bd \r\n e\u0000\u0007  ')).toBe('a b\n\ncd\ne');
  });

  it('drops unpaired surrogates but keeps emoji', () => {
    expect(normalizeWhitespace('ok \ud83d\ude00 \ud800x')).toBe('ok \ud83d\ude00 x');
  });

  it('documents the default limits', () => {
    expect(EXTRACTION_LIMITS).toMatchObject({ maxChars: 5_000_000, maxPages: 2_000 });
  });
});
