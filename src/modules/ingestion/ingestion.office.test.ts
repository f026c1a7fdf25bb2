import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { ingestFile, LIFTED_THROTTLES } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { bombContent, buildPptx, buildXlsx } from '../../../test/support/office-files.js';
import { documentChunks } from '../documents/documents.table.js';

/** Spreadsheets and presentations through the upload API and the job queue: chunks carry the sheet or slide number. */
const t = useTestApp({ ...LIFTED_THROTTLES });

const chunkRows = (id: string) =>
  t.deps.database.db.select().from(documentChunks).where(eq(documentChunks.documentId, id)).orderBy(documentChunks.chunkIndex);

async function ingest(name: string, contentType: string, bytes: Buffer) {
  const owner = await newUser(t);
  const ws = await newWorkspace(t, owner);
  return ingestFile(t, ws.id, owner, { name, contentType, bytes });
}

describe('office formats become chunks numbered by sheet or slide', () => {
  it('XLSX: one chunk group per sheet, `page` = sheet number, rows whole', async () => {
    const rows = Array.from({ length: 120 }, (_, i) => [`Order ${i}`, 'Stainless steel whisk', i * 3]);
    const bytes = buildXlsx([{ name: 'Orders', rows }, { name: 'Summary', rows: [['Total', 'all orders shipped']] }], { deflate: true });
    const { document, status } = await ingest('orders.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', bytes);
    expect(status).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS', error_message: null } });
    const chunks = await chunkRows(document.id);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((c) => c.page))).toEqual(new Set([1, 2]));
    expect(chunks[0]!.content.startsWith('Sheet: Orders\nOrder 0 | Stainless steel whisk | 0')).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ page: 2, content: 'Sheet: Summary\nTotal | all orders shipped' });
    for (const chunk of chunks.filter((c) => c.page === 1)) {
      for (const line of chunk.content.split('\n')) expect(line).toMatch(/^(Sheet: Orders|Order \d+ \| Stainless steel whisk \| \d+)$/);
    }
  });

  it('PPTX: `page` = slide number, notes in the slide text', async () => {
    const bytes = buildPptx([{ lines: ['Launch plan'], notes: ['Ask about the budget'] }, { lines: ['Timeline: March'] }], { deflate: true });
    const { document, status } = await ingest('plan.pptx', 'application/vnd.openxmlformats-officedocument.presentationml.presentation', bytes);
    expect(status).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS' } });
    const chunks = await chunkRows(document.id);
    expect(chunks.map((c) => [c.page, c.content])).toEqual([
      [1, 'Launch plan\n\nNotes:\nAsk about the budget'],
      [2, 'Timeline: March'],
    ]);
  });

  it('a zip bomb fails the task with a user-facing message', async () => {
    const bytes = buildXlsx([{ name: 'S', rows: [['a']] }], { extra: [{ name: 'xl/media/bomb.bin', content: bombContent(20 * 1024 * 1024), deflate: true }] });
    const { document, status } = await ingest('bomb.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', bytes);
    expect(status).toMatchObject({ processing_status: 'failed', task: { status: 'FAILURE' } });
    expect(status.task.error_message).toMatch(/too large to read once unpacked/);
    expect(await chunkRows(document.id)).toEqual([]);
  });
});
