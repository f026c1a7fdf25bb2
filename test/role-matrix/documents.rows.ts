import { eq } from 'drizzle-orm';
import { uploadKeyOf } from '../../src/modules/documents/documents.service.js';
import { documents } from '../../src/modules/documents/documents.table.js';
import { type LocalSite, send, startLocalSite } from '../support/documents.js';
import type { TestUser } from '../support/factories.js';
import { type MatrixRow, statuses, type World } from './world.js';

/*
 * Documents: a member sees their own uploads and the documents of knowledge bases they can read;
 * the owner and admins see all. Changing (update, delete, confirm, reprocess) is for the uploader
 * and the owner/admins: a member who only reads a document gets 403, one who cannot see it 404.
 */

let site: LocalSite | undefined;
/** Settings for the import rows: a local page to import and the allow list that lets it be fetched. */
export const documentsEnv: Record<string, string> = {
  THROTTLE_DOCUMENT_UPLOADS: '100000/hour',
  URL_FETCH_ALLOWED_PRIVATE_HOSTS: '127.0.0.1/32',
};

export async function startDocumentsSite() {
  site = await startLocalSite();
  site.routes.set('/page', send(200, '<html><head><title>Matrix</title></head><body><p>A page to import.</p></body></html>'));
}

export async function stopDocumentsSite() {
  await site?.close();
}

const docsBase = (w: World) => `/api/workspaces/${w.workspace.id}/documents/`;

/**
 * A document uploaded by `uploader`, with its file in storage. `confirmed` marks it stored and
 * ready (as after ingestion) without running a job; otherwise it waits for confirm-upload.
 */
async function doc(w: World, uploader: TestUser, options: { confirmed?: boolean; knowledgeBaseIds?: string[] } = {}) {
  const body = Buffer.from('Matrix text');
  const { document } = await w.t.deps.services.documents.upload(uploader.id, w.workspace.id, {
    name: 'matrix.txt',
    content_type: 'text/plain',
    size: body.length,
    knowledge_base_ids: options.knowledgeBaseIds ?? [],
  });
  const db = w.t.deps.database.db;
  const [row] = await db.select().from(documents).where(eq(documents.id, document.id));
  // Where the client's PUT lands; a confirmed document's file lives under its own key.
  const key = options.confirmed ? row!.storageKey : uploadKeyOf(row!);
  await w.t.deps.storage.put(key, body, { contentType: 'text/plain', contentLength: body.length });
  if (options.confirmed) {
    await db.update(documents).set({ storedAt: new Date(), processingStatus: 'ready' }).where(eq(documents.id, document.id));
  }
  return `${docsBase(w)}${document.id}/`;
}

const memberDoc = (w: World, options: { confirmed?: boolean } = {}) => doc(w, w.users.member, options);
const adminDoc = (w: World, options: { confirmed?: boolean } = {}) => doc(w, w.users.admin, options);
/** The admin's document in the admin's knowledge base shared with the workspace: the member reads it only. */
async function adminSharedDoc(w: World) {
  const kb = await w.t.deps.services.knowledgeBases.create(w.users.admin.id, w.workspace.id, {
    name: 'Shared',
    description: '',
    is_shared_with_workspace: true,
  });
  return doc(w, w.users.admin, { confirmed: true, knowledgeBaseIds: [kb.id] });
}

const everyMember = (ok: number) => statuses(ok, ok, ok, 403, 403);
const hiddenFromMember = (ok: number) => statuses(ok, ok, 404, 403, 403);
const readOnlyForMember = (ok: number) => statuses(ok, ok, 403, 403, 403);

export const documentsRows: MatrixRow[] = [
  { route: 'GET /api/workspaces/:ws/documents/', request: (w) => ({ url: docsBase(w) }), expect: everyMember(200) },
  {
    route: 'POST /api/workspaces/:ws/documents/upload/',
    request: (w) => ({ url: `${docsBase(w)}upload/`, body: { name: 'a.txt', content_type: 'text/plain', size: 5 } }),
    expect: everyMember(201),
  },
  {
    route: 'POST /api/workspaces/:ws/documents/from-url/',
    request: (w) => ({ url: `${docsBase(w)}from-url/`, body: { url: `${site!.url}/page` } }),
    expect: everyMember(202),
  },
  {
    route: 'POST /api/workspaces/:ws/documents/from-url/',
    label: 'a refused URL',
    request: (w) => ({ url: `${docsBase(w)}from-url/`, body: { url: 'http://169.254.169.254/latest/meta-data/' } }),
    expect: everyMember(400),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/',
    label: "the member's upload",
    request: async (w) => ({ url: await memberDoc(w) }),
    expect: everyMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/',
    label: "the admin's upload",
    request: async (w) => ({ url: await adminDoc(w) }),
    expect: hiddenFromMember(200),
  },
  {
    route: 'PUT /api/workspaces/:ws/documents/:id/',
    label: "the member's upload",
    request: async (w) => ({ url: await memberDoc(w), body: { name: 'Renamed' } }),
    expect: everyMember(200),
  },
  {
    route: 'PUT /api/workspaces/:ws/documents/:id/',
    label: "the admin's upload",
    request: async (w) => ({ url: await adminDoc(w), body: { name: 'Renamed' } }),
    expect: hiddenFromMember(200),
  },
  {
    route: 'PATCH /api/workspaces/:ws/documents/:id/',
    label: "the admin's upload in a shared knowledge base: read-only for the member",
    request: async (w) => ({ url: await adminSharedDoc(w), body: { name: 'Renamed' } }),
    expect: readOnlyForMember(200),
  },
  {
    route: 'DELETE /api/workspaces/:ws/documents/:id/',
    label: "the member's upload",
    request: async (w) => ({ url: await memberDoc(w) }),
    expect: everyMember(204),
  },
  {
    route: 'DELETE /api/workspaces/:ws/documents/:id/',
    label: "the admin's upload in a shared knowledge base",
    request: async (w) => ({ url: await adminSharedDoc(w) }),
    expect: readOnlyForMember(204),
  },
  {
    route: 'POST /api/workspaces/:ws/documents/:id/confirm-upload/',
    label: "the member's upload",
    request: async (w) => ({ url: `${await memberDoc(w)}confirm-upload/` }),
    expect: everyMember(202),
  },
  {
    route: 'POST /api/workspaces/:ws/documents/:id/confirm-upload/',
    label: "the admin's upload",
    request: async (w) => ({ url: `${await adminDoc(w)}confirm-upload/` }),
    expect: hiddenFromMember(202),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/download-url/',
    label: "the member's upload",
    request: async (w) => ({ url: `${await memberDoc(w, { confirmed: true })}download-url/` }),
    expect: everyMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/download-url/',
    label: "the admin's upload",
    request: async (w) => ({ url: `${await adminDoc(w, { confirmed: true })}download-url/` }),
    expect: hiddenFromMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/processing-status/',
    label: "the member's upload",
    request: async (w) => ({ url: `${await memberDoc(w)}processing-status/` }),
    expect: everyMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/processing-status/',
    label: "the admin's upload",
    request: async (w) => ({ url: `${await adminDoc(w)}processing-status/` }),
    expect: hiddenFromMember(200),
  },
  {
    route: 'POST /api/workspaces/:ws/documents/:id/reprocess/',
    label: "the member's upload",
    request: async (w) => ({ url: `${await memberDoc(w, { confirmed: true })}reprocess/` }),
    expect: everyMember(202),
  },
  {
    route: 'POST /api/workspaces/:ws/documents/:id/reprocess/',
    label: "the admin's upload in a shared knowledge base: read-only for the member",
    request: async (w) => ({ url: `${await adminSharedDoc(w)}reprocess/` }),
    expect: readOnlyForMember(202),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/chunks/',
    label: "the member's upload",
    request: async (w) => ({ url: `${await memberDoc(w, { confirmed: true })}chunks/` }),
    expect: everyMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/documents/:id/chunks/',
    label: "the admin's upload in a shared knowledge base",
    request: async (w) => ({ url: `${await adminSharedDoc(w)}chunks/` }),
    expect: everyMember(200),
  },
];
