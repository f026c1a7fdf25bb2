import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { createKb, ingestFile, LIFTED_THROTTLES } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { bombContent, buildPptx, buildXlsx } from '../../../test/support/office-files.js';
import { withKnowledgeContext } from '../agents/frameworks.js';
import { buildPdf } from '../../../test/support/document-files.js';
import { documentChunks, documents } from '../documents/documents.table.js';

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

describe('the page unit comes from the format read, not the file name', () => {
  it('a workbook without an extension cites sheets; a PDF named .pptx cites pages; text has none', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const kb = await createKb(t, ws.id, owner);
    const workbook = buildXlsx([{ name: 'Orders', rows: [['Invoice 7', 'copper kettle']] }], { deflate: true });
    const sheet = await ingestFile(t, ws.id, owner, { name: 'export', contentType: 'application/octet-stream', bytes: workbook, knowledge_base_ids: [kb.id] });
    const pdf = await ingestFile(t, ws.id, owner, {
      name: 'slides.pptx',
      contentType: 'application/pdf',
      bytes: buildPdf([['A copper kettle on page one.']]),
      knowledge_base_ids: [kb.id],
    });
    const text = await ingestFile(t, ws.id, owner, { name: 'notes.txt', contentType: 'text/plain', bytes: Buffer.from('The copper kettle, in plain text.'), knowledge_base_ids: [kb.id] });
    for (const doc of [sheet, pdf, text]) expect(doc.status.processing_status).toBe('ready');
    const units = await t.deps.database.db.select({ id: documents.id, pageUnit: documents.pageUnit }).from(documents).where(eq(documents.workspaceId, ws.id));
    expect(new Map(units.map((u) => [u.id, u.pageUnit]))).toEqual(
      new Map([
        [sheet.document.id, 'sheet'],
        [pdf.document.id, 'page'],
        [text.document.id, null],
      ]),
    );

    const chat = await t.deps.services.chats.create(owner.id, ws.id, { name: 'Chat', system_prompt: '', agent_framework: 'direct', model_parameters: {} });
    const attached = await t.post(`/api/workspaces/${ws.id}/chats/${chat.id}/knowledge-bases/attach/`, { knowledge_base_ids: [kb.id] }, owner);
    expect(attached.statusCode, attached.body).toBe(200);
    const hits = await t.deps.services.knowledge.search({ workspaceId: ws.id, chatId: chat.id, query: 'copper kettle', limit: 6 });
    const byDocument = new Map(hits.map((h) => [h.document_id, h]));
    expect(byDocument.get(sheet.document.id)).toMatchObject({ page: 1, page_unit: 'sheet' });
    expect(byDocument.get(pdf.document.id)).toMatchObject({ page: 1, page_unit: 'page' });
    expect(byDocument.get(text.document.id)).toMatchObject({ page: null });
    expect(byDocument.get(text.document.id)).not.toHaveProperty('page_unit');
    const prompt = withKnowledgeContext(undefined, hits)!;
    expect(prompt).toContain('(export, sheet 1)');
    expect(prompt).toContain('(slides.pptx, page 1)');
    expect(prompt).toMatch(/\(notes\.txt\)\n/);
  });
});
