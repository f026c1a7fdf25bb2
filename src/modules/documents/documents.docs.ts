import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { chunkOut, documentOut, fromUrlBody, processingStatusOut, taskOut, uploadBody, uploadOut } from './documents.schemas.js';

const workspaceId = '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a';
const document = {
  id: '0198f300-7c8d-7e9f-8a0b-1c2d3e4f5a6b',
  workspace: workspaceId,
  name: 'Refund policy 2025.pdf',
  content_type: 'application/pdf',
  size: 482133,
  source_kind: 'upload',
  source_url: null,
  processing_status: 'ready',
  language: 'eng',
  uploaded_by: 42,
  knowledge_base_ids: ['0198f310-8d9e-7f0a-9b1c-2d3e4f5a6b7c'],
  created_at: '2025-03-14T09:40:00.000Z',
  updated_at: '2025-03-14T09:40:31.000Z',
};
const task = {
  id: '0198f301-0a1b-7c2d-9e3f-4a5b6c7d8e9f',
  document: document.id,
  task_id: '0198f301-0a1b-7c2d-9e3f-4a5b6c7d8ea0',
  status: 'SUCCESS',
  error_message: null,
  created_at: '2025-03-14T09:40:05.000Z',
};

namedSchema(documentOut, 'Document', { description: 'A file or web page of a workspace, split into chunks for search.', example: document });
namedSchema(taskOut, 'ProcessingTask', { description: 'The latest processing (extract, chunk, embed) of a document.', example: task });
namedSchema(processingStatusOut, 'ProcessingStatus', {
  description: "A document's processing status and its latest task.",
  example: { processing_status: 'processing', task: { ...task, status: 'STARTED' } },
});
namedSchema(uploadBody, 'UploadRequest', {
  description: 'The file about to be uploaded: its name, type and exact size (and optionally its SHA-256).',
  example: {
    name: 'Refund policy 2025.pdf',
    content_type: 'application/pdf',
    size: 482133,
    knowledge_base_ids: ['0198f310-8d9e-7f0a-9b1c-2d3e4f5a6b7c'],
    checksum_sha256: 'n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=',
  },
});
namedSchema(uploadOut, 'Upload', {
  description: 'The new document (status `pending`) and where to PUT the file.',
  example: {
    document: { ...document, processing_status: 'pending', language: null, updated_at: document.created_at },
    upload: {
      url: 'http://localhost:8000/files/upload/ws/0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a/0198f300-7c8d-7e9f-8a0b-1c2d3e4f5a6b?ct=application%2Fpdf&max=482133&exp=1741946700&sig=9c1f0e4b7a',
      method: 'PUT',
      headers: { 'Content-Type': 'application/pdf' },
      expires_at: '2025-03-14T10:05:00.000Z',
    },
  },
});
namedSchema(fromUrlBody, 'FromUrlRequest', {
  description: 'A public web page, PDF or YouTube video to import.',
  example: { url: 'https://www.example.org/help/refunds', name: 'Refunds help page', knowledge_base_ids: [] },
});
namedSchema(chunkOut, 'Chunk', {
  description: 'A piece of a document as it is searched and cited.',
  example: { id: '0198f302-1b2c-7d3e-8f4a-5b6c7d8e9f0a', index: 0, content: 'Customers may ask for a refund within 30 days of purchase.', token_count: 12, page: 1 },
});

const member = { 403: ['not_workspace_member'] };
const changer = { 403: ['not_workspace_member', 'permission_denied'], 409: ['workspace_archived'] };
const visibility =
  'Visible to its uploader, the workspace owner and admins, and readers of a knowledge base that holds it; others get 404.';
const planLimits = ['document_limit', 'storage_limit', 'credit_exhausted'];

export const documentsDocs: OperationDocs = {
  'GET /api/workspaces/:ws/documents/': {
    operationId: 'documents_list',
    summary: 'List documents',
    description: `Any member: the documents they can see, newest first. ${visibility}`,
    errors: member,
  },
  'POST /api/workspaces/:ws/documents/upload/': {
    operationId: 'documents_upload',
    summary: 'Start an upload (step 1 of 3)',
    description:
      'Any member. The upload flow: (1) this call records the document (`pending`) and answers a signed URL; (2) ' +
      '`PUT` the exact bytes to `upload.url` with `upload.headers` before `upload.expires_at` (the URL works once); ' +
      '(3) `POST .../documents/{id}/confirm-upload/` queues the processing. Refused before anything is stored: 402 ' +
      '`file_too_large` (over the plan\'s size per file), `document_limit`, `storage_limit`, `credit_exhausted`; 400 ' +
      '`invalid_knowledge_bases` for knowledge bases you cannot add to. THROTTLE_DOCUMENT_UPLOADS per user (429).',
    errors: { 400: ['invalid_knowledge_bases'], 402: ['file_too_large', ...planLimits], ...changer },
    throttled: true,
  },
  'POST /api/workspaces/:ws/documents/from-url/': {
    operationId: 'documents_from_url',
    summary: 'Import a web page, PDF or YouTube video',
    description:
      'Any member. The URL must be public http(s) (400 `url_not_allowed` for private addresses, credentials, odd ' +
      'ports); it is fetched and processed in the background (202; follow `processing-status/`). 402 ' +
      '`document_limit`, `storage_limit`, `credit_exhausted`; 400 `invalid_knowledge_bases`. THROTTLE_DOCUMENT_UPLOADS ' +
      'per user (429).',
    errors: { 400: ['url_not_allowed', 'invalid_knowledge_bases'], 402: planLimits, ...changer },
    throttled: true,
    responseExamples: {
      202: {
        document: {
          ...document,
          name: 'Refunds help page',
          content_type: 'text/html',
          size: 0,
          source_kind: 'web_url',
          source_url: 'https://www.example.org/help/refunds',
          processing_status: 'pending',
          language: null,
          knowledge_base_ids: [],
        },
        task: { ...task, status: 'PENDING' },
      },
    },
  },
  'GET /api/workspaces/:ws/documents/:id/': {
    operationId: 'documents_get',
    summary: 'Get a document',
    description: visibility,
    errors: member,
  },
  'PUT /api/workspaces/:ws/documents/:id/': {
    operationId: 'documents_replace',
    summary: 'Rename a document or change its knowledge bases (PUT)',
    description: 'Same as PATCH.',
    errors: { ...changer, 400: ['invalid_knowledge_bases'] },
    requestExample: { name: 'Refund policy (2025 edition).pdf', knowledge_base_ids: ['0198f310-8d9e-7f0a-9b1c-2d3e4f5a6b7c'] },
  },
  'PATCH /api/workspaces/:ws/documents/:id/': {
    operationId: 'documents_update',
    summary: 'Rename a document or change its knowledge bases',
    description:
      'Its uploader or the workspace owner or an admin (403 `permission_denied`). `knowledge_base_ids` replaces the ' +
      'list (400 `invalid_knowledge_bases` for ones you cannot add to).',
    errors: { ...changer, 400: ['invalid_knowledge_bases'] },
    requestExample: { name: 'Refund policy (2025 edition).pdf' },
  },
  'DELETE /api/workspaces/:ws/documents/:id/': {
    operationId: 'documents_delete',
    summary: 'Delete a document',
    description: 'Its uploader or the workspace owner or an admin (403 `permission_denied`); removes the file and its chunks.',
    errors: changer,
  },
  'POST /api/workspaces/:ws/documents/:id/confirm-upload/': {
    operationId: 'documents_confirm_upload',
    summary: 'Confirm an upload and process it (step 3 of 3)',
    description:
      'Its uploader or the workspace owner or an admin. The stored file must be there (400 `upload_missing`), have ' +
      'the declared size (400 `upload_size_mismatch`) and checksum (400 `checksum_mismatch`): a wrong file is ' +
      'discarded so the same URL flow can be repeated. 402 when the plan\'s limits would be exceeded; 409 ' +
      '`not_an_upload` for an imported URL. Answers 202 with the queued task.',
    errors: {
      ...changer,
      400: ['upload_missing', 'upload_size_mismatch', 'checksum_mismatch'],
      402: ['file_too_large', 'storage_limit', 'credit_exhausted'],
      409: ['not_an_upload', 'workspace_archived'],
    },
  },
  'GET /api/workspaces/:ws/documents/:id/download-url/': {
    operationId: 'documents_download_url',
    summary: 'Get a signed download URL',
    description: `${visibility} 409 \`file_not_available\` before the file is stored (or for an imported URL).`,
    errors: { ...member, 409: ['file_not_available'] },
    responseExamples: {
      200: {
        url: 'http://localhost:8000/files/download/ws/0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a/0198f300-7c8d-7e9f-8a0b-1c2d3e4f5a6b?exp=1741946700&sig=77ab02c1d9',
        expires_at: '2025-03-14T10:05:00.000Z',
      },
    },
  },
  'GET /api/workspaces/:ws/documents/:id/processing-status/': {
    operationId: 'documents_processing_status',
    summary: "Get a document's processing status",
    description: visibility,
    errors: member,
  },
  'POST /api/workspaces/:ws/documents/:id/reprocess/': {
    operationId: 'documents_reprocess',
    summary: 'Process a document again',
    description:
      'Its uploader or the workspace owner or an admin (403 `permission_denied`); 400 `upload_missing` for an upload ' +
      'never confirmed; 402 `credit_exhausted`. THROTTLE_DOCUMENT_UPLOADS per user (429).',
    errors: { ...changer, 400: ['upload_missing'], 402: ['credit_exhausted'] },
    throttled: true,
  },
  'GET /api/workspaces/:ws/documents/:id/chunks/': {
    operationId: 'documents_chunks',
    summary: "List a document's chunks",
    description: `${visibility} In document order.`,
    errors: member,
  },
};

const binary = { type: 'string', contentMediaType: 'application/octet-stream' };
/** The query of a signed URL: use the URL as given, these are listed so that clients keep them. */
const signed = (names: string[]) =>
  names.map((name) => ({ name, in: 'query', required: name === 'exp' || name === 'sig', description: 'Part of the signed URL.', schema: { type: 'string' } }));

export const filesDocs: OperationDocs = {
  'PUT /files/upload/*': {
    operationId: 'files_upload',
    summary: 'Upload a file to a signed URL (step 2 of 3)',
    description:
      'Served by the local file store (STORAGE_BACKEND=local); with S3 the signed URL points at the bucket instead. ' +
      'No token: the signature in the URL (`exp`, `sig`) is the credential, so call exactly the `upload.url` ' +
      'from `POST .../documents/upload/` with its `upload.headers`. The body is the raw file. 403 ' +
      '`invalid_signature`, `url_expired`, `content_type_mismatch`; 409 `upload_already_used` (each URL works ' +
      'once); 413 over the declared size; 507 `storage_full`.',
    errors: {
      403: ['invalid_signature', 'url_expired', 'content_type_mismatch'],
      409: ['upload_already_used'],
      507: ['storage_full'],
    },
    parameters: signed(['ct', 'max', 'exp', 'sig']),
    requestContent: { '*/*': { schema: binary } },
    responses: { 200: { description: 'Stored.' } },
  },
  'GET /files/download/*': {
    operationId: 'files_download',
    summary: 'Download a file from a signed URL',
    description:
      'Served by the local file store. No token: the signature in the URL from `download-url/` is the credential. 403 ' +
      '`invalid_signature`, `url_expired`; 404 when the file is gone.',
    errors: { 403: ['invalid_signature', 'url_expired'], 404: ['object_not_found'] },
    parameters: signed(['exp', 'sig']),
    responses: {
      200: {
        description: 'The file, as an attachment.',
        content: { 'application/octet-stream': { schema: binary } },
      },
    },
  },
};
