import { chunkEmbeddings } from '../embeddings/embeddings.table.js';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { docsBase, FIXTURE_FILES, fixture, ingestFile, LIFTED_THROTTLES } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { documentChunks, documents, ingestionTasks } from '../documents/documents.table.js';

/** Ingestion of a real file of each supported type, through the upload API and the job queue. */
const t = useTestApp({ ...LIFTED_THROTTLES });

const db = () => t.deps.database.db;
const chunkRows = (id: string) => db().select().from(documentChunks).where(eq(documentChunks.documentId, id)).orderBy(documentChunks.chunkIndex);

async function setup() {
  const owner = await newUser(t);
  const ws = await newWorkspace(t, owner);
  return { owner, ws, base: docsBase(ws.id) };
}

/** What a user-facing message must not contain: stack frames, error class names, paths, library internals. */
function expectUserFacing(message: unknown) {
  expect(message).toEqual(expect.any(String));
  const text = message as string;
  expect(text.length).toBeGreaterThan(10);
  expect(text).not.toMatch(/\n\s+at |Error:|TypeError|undefined|null|\/(tmp|home|work|var)\/|node_modules|pdf\.js|ENOENT|EIO/);
}

describe('each supported type becomes searchable chunks', () => {
  it.each(FIXTURE_FILES)('$format ($file)', async ({ format, file, contentType, phrase }) => {
    const { owner, ws, base } = await setup();
    const { document, status } = await ingestFile(t, ws.id, owner, { name: file, contentType, bytes: fixture(file) });
    expect(status).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS', error_message: null } });

    const chunks = await chunkRows(document.id);
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.map((c) => c.chunkIndex)).toEqual([...chunks.keys()]);
    expect(chunks.map((c) => c.content).join('\n')).toContain(phrase);
    for (const chunk of chunks) {
      expect(chunk.tokenCount).toBeGreaterThan(0);
      expect(chunk.workspaceId).toBe(ws.id);
      expect(chunk.page).toEqual(format === 'pdf' ? expect.any(Number) : null);
    }
    // No EMBEDDING_MODEL in this app: lexical search only, no vectors stored.
    expect(await db().select().from(chunkEmbeddings).where(eq(chunkEmbeddings.documentId, document.id))).toEqual([]);
    // The generated tsvector makes the chunks findable by full-text search.
    const [task] = await db().select().from(ingestionTasks).where(eq(ingestionTasks.documentId, document.id));
    expect(task).toMatchObject({ status: 'SUCCESS', attempts: 1 });

    const api = await t.get(`${base}${document.id}/chunks/`, owner);
    expect(api.json().count).toBe(chunks.length);
  });

  it('keeps HTML chrome and scripts out of the text', async () => {
    const { owner, ws } = await setup();
    const { document } = await ingestFile(t, ws.id, owner, { name: 'article.html', contentType: 'text/html', bytes: fixture('article.html') });
    const text = (await chunkRows(document.id)).map((c) => c.content).join('\n');
    expect(text).not.toContain('TRACKING_SCRIPT_TEXT');
    expect(text).not.toContain('Shop our flour');
  });
});

describe('files that cannot be read fail cleanly', () => {
  it.each([
    ['a truncated PDF', 'broken.pdf', 'application/pdf', fixture('sample.pdf').subarray(0, 200)],
    ['a corrupt DOCX', 'broken.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', fixture('sample.docx').subarray(0, 120)],
    ['invalid JSON', 'broken.json', 'application/json', Buffer.from('{"a": [1, 2,')],
    ['an image', 'photo.png', 'image/png', Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')],
    ['a file with no text', 'blank.txt', 'text/plain', Buffer.from(' \n\n \t ')],
  ])('%s: task FAILURE with a user-facing message, document failed, no chunks', async (_label, name, contentType, bytes) => {
    const { owner, ws } = await setup();
    const { document, status } = await ingestFile(t, ws.id, owner, { name, contentType, bytes });
    expect(status).toMatchObject({ processing_status: 'failed', task: { status: 'FAILURE' } });
    expectUserFacing(status.task.error_message);
    expect(await chunkRows(document.id)).toEqual([]);
    const [row] = await db().select().from(documents).where(eq(documents.id, document.id));
    expect(row!.processingStatus).toBe('failed');
    // Bad input is not retried.
    const [task] = await db().select().from(ingestionTasks).where(eq(ingestionTasks.documentId, document.id));
    expect(task!.attempts).toBe(1);
  });

  it('a failed document can be fixed by reprocessing once the file is replaced', async () => {
    const { owner, ws, base } = await setup();
    const { document, status } = await ingestFile(t, ws.id, owner, { name: 'data.json', contentType: 'application/json', bytes: Buffer.from('{') });
    expect(status.processing_status).toBe('failed');
    const [row] = await db().select().from(documents).where(eq(documents.id, document.id));
    await t.deps.storage.put(row!.storageKey, fixture('config.json'), { contentType: 'application/json' });
    expect((await t.post(`${base}${document.id}/reprocess/`, {}, owner)).statusCode).toBe(202);
    await t.deps.jobs.drain();
    const after = (await t.get(`${base}${document.id}/processing-status/`, owner)).json();
    expect(after).toMatchObject({ processing_status: 'ready', task: { status: 'SUCCESS', error_message: null } });
  });
});
