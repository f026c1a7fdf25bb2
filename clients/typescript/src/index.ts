import createFetchClient, { type Client } from 'openapi-fetch';
import { ApiError } from './errors.js';
import type { components, operations, paths } from './schema.js';
import { MessageStream, type ReconnectOptions } from './stream.js';

export { ApiError, parseRetryAfter } from './errors.js';
export { MessageStream, StreamDisconnectedError, StreamFailedError, type ReconnectOptions, type StreamEvent } from './stream.js';
export { SseParser, type RawEvent } from './sse.js';
export type { components, operations, paths } from './schema.js';

/** The named schemas of the API document (`Schemas['Chat']`, `Schemas['Document']`, ...). */
export type Schemas = components['schemas'];

/** The JSON request body of an operation, by operationId. */
export type JsonBody<Op extends keyof operations> = operations[Op] extends {
  requestBody?: { content: { 'application/json': infer Body } };
}
  ? Body
  : never;

/** The query parameters of an operation, by operationId. */
export type Query<Op extends keyof operations> = operations[Op] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export interface ClientOptions {
  /** Where the service answers, e.g. `https://ai.example.com` (no trailing slash needed). */
  baseUrl: string;
  /** A session token (`POST /auth/token/login/`) or a personal API key (read-only). */
  token?: string;
  /** The fetch to use (default: the global one); tests and proxies pass their own. */
  fetch?: (request: Request) => Promise<Response>;
  /** How a dropped reply stream is reattached (default: 5 attempts, 250 ms doubling up to 5 s). */
  reconnect?: ReconnectOptions;
}

export interface UploadInput {
  name: string;
  contentType: string;
  /** The file's bytes. */
  body: Blob | ArrayBuffer | Uint8Array | string;
  /** Knowledge bases the document joins once processed. */
  knowledgeBaseIds?: string[];
}

/** Unwraps an openapi-fetch answer: its data, or a thrown ApiError. */
async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw ApiError.fromResponse(response, error);
  return data as T;
}

function bytesOf(body: UploadInput['body']): Blob {
  return body instanceof Blob ? body : new Blob([body as Uint8Array<ArrayBuffer>]);
}

/**
 * A typed client of the Workspace AI service. The groups cover the main flows; `raw` is the
 * underlying openapi-fetch client (typed by the API document) for everything else. Every method
 * throws an `ApiError` for a non-2xx answer.
 */
export function createClient(options: ClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const fetchImpl = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const authorization: Record<string, string> = options.token ? { Authorization: `Bearer ${options.token}` } : {};
  const raw: Client<paths> = createFetchClient<paths>({ baseUrl, fetch: fetchImpl, headers: authorization });
  const reconnect: Required<ReconnectOptions> = { retries: 5, initialDelayMs: 250, maxDelayMs: 5000, ...options.reconnect };

  type WsChat = { ws: string; session: string };
  const streamUrl = (ws: string, chat: string, rest: string) =>
    `${baseUrl}/api/workspaces/${encodeURIComponent(ws)}/chats/${encodeURIComponent(chat)}/messages/stream/${rest}`;

  const stop = async (ws: string, chat: string, streamId: string) =>
    ok(raw.POST('/api/workspaces/{ws}/chats/{session}/messages/stream/stop/', { params: { path: { ws, session: chat } }, body: { stream_id: streamId } }));

  const reattachRequest = (ws: string, chat: string, streamId: string) => (lastEventId: string | undefined, signal: AbortSignal) =>
    fetchImpl(
      new Request(streamUrl(ws, chat, `${encodeURIComponent(streamId)}/`), {
        headers: { ...authorization, Accept: 'text/event-stream', ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) },
        signal,
      }),
    );

  const messages = {
    list: (ws: string, chat: string, query: Query<'messages_list'> = {}) =>
      ok(raw.GET('/api/workspaces/{ws}/chats/{session}/messages/', { params: { path: { ws, session: chat } satisfies WsChat, query } })),
    /** Sends a message and waits for the saved reply (JSON, 201). Use `stream` to see it being written. */
    send: (ws: string, chat: string, body: JsonBody<'messages_send'>) =>
      ok(
        raw.POST('/api/workspaces/{ws}/chats/{session}/messages/', {
          params: { path: { ws, session: chat } },
          body,
          headers: { Accept: 'application/json' },
        }),
      ),
    /**
     * Sends a message and streams the reply: `for await (const event of client.messages.stream(...))`.
     * The stream id is chosen here (or taken from `body.stream_id`), so `stop()` works at once.
     */
    stream(ws: string, chat: string, body: JsonBody<'messages_stream'>): MessageStream {
      const streamId = body.stream_id ?? globalThis.crypto.randomUUID();
      return new MessageStream(
        streamId,
        {
          open: (signal) =>
            fetchImpl(
              new Request(streamUrl(ws, chat, ''), {
                method: 'POST',
                headers: { ...authorization, Accept: 'text/event-stream', 'Content-Type': 'application/json' },
                body: JSON.stringify({ ...body, stream_id: streamId }),
                signal,
              }),
            ),
          reattach: reattachRequest(ws, chat, streamId),
          stop: async () => void (await stop(ws, chat, streamId)),
        },
        reconnect,
      );
    },
    /** Follows a stream started elsewhere (another tab, a previous process), from `lastEventId` or from its start. */
    reattach(ws: string, chat: string, streamId: string, lastEventId?: string): MessageStream {
      const reattach = reattachRequest(ws, chat, streamId);
      return new MessageStream(
        streamId,
        { open: (signal) => reattach(lastEventId, signal), reattach, stop: async () => void (await stop(ws, chat, streamId)) },
        reconnect,
      );
    },
    /** Stops a stream from any connection; it then ends with `done` and `stopped: true`. */
    stop,
  };

  return {
    raw,
    auth: {
      register: (body: JsonBody<'auth_register'>) => ok(raw.POST('/auth/users/', { body })),
      /** Returns a session token: pass it as `token` to a new client. */
      login: async (body: JsonBody<'auth_login'>) => (await ok(raw.POST('/auth/token/login/', { body }))).auth_token,
      logout: () => ok(raw.POST('/auth/token/logout/')),
      me: () => ok(raw.GET('/auth/users/me/')),
      apiKeys: {
        create: (body: JsonBody<'api_keys_create'>) => ok(raw.POST('/auth/api-keys/', { body })),
        list: () => ok(raw.GET('/auth/api-keys/')),
        revoke: (id: string) => ok(raw.DELETE('/auth/api-keys/{id}/', { params: { path: { id } } })),
      },
    },
    workspaces: {
      list: (query: Query<'workspaces_list'> = {}) => ok(raw.GET('/api/workspaces/', { params: { query } })),
      create: (body: JsonBody<'workspaces_create'>) => ok(raw.POST('/api/workspaces/', { body })),
      get: (id: string) => ok(raw.GET('/api/workspaces/{id}/', { params: { path: { id } } })),
      update: (id: string, body: JsonBody<'workspaces_update'>) => ok(raw.PATCH('/api/workspaces/{id}/', { params: { path: { id } }, body })),
      delete: (id: string) => ok(raw.DELETE('/api/workspaces/{id}/', { params: { path: { id } } })),
      members: (workspace: string, query: Omit<Query<'workspace_memberships_list'>, 'workspace'> = {}) =>
        ok(raw.GET('/api/workspacememberships/', { params: { query: { ...query, workspace } } })),
    },
    invitations: {
      create: (ws: string, body: JsonBody<'workspace_invitations_create'>) =>
        ok(raw.POST('/api/workspaces/{id}/invitations/', { params: { path: { id: ws } }, body })),
      list: (ws: string) => ok(raw.GET('/api/workspaces/{id}/invitations/', { params: { path: { id: ws } } })),
      /** The invitations addressed to the signed-in user. */
      mine: () => ok(raw.GET('/api/invitations/')),
      accept: (id: string) => ok(raw.POST('/api/invitations/{id}/accept/', { params: { path: { id } }, body: {} })),
      decline: (id: string) => ok(raw.POST('/api/invitations/{id}/decline/', { params: { path: { id } }, body: {} })),
    },
    chats: {
      list: (ws: string, query: Query<'chats_list'> = {}) => ok(raw.GET('/api/workspaces/{ws}/chats/', { params: { path: { ws }, query } })),
      create: (ws: string, body: JsonBody<'chats_create'>) => ok(raw.POST('/api/workspaces/{ws}/chats/', { params: { path: { ws } }, body })),
      get: (ws: string, id: string) => ok(raw.GET('/api/workspaces/{ws}/chats/{id}/', { params: { path: { ws, id } } })),
      update: (ws: string, id: string, body: JsonBody<'chats_update'>) =>
        ok(raw.PATCH('/api/workspaces/{ws}/chats/{id}/', { params: { path: { ws, id } }, body })),
      delete: (ws: string, id: string) => ok(raw.DELETE('/api/workspaces/{ws}/chats/{id}/', { params: { path: { ws, id } } })),
      attachKnowledgeBases: (ws: string, chat: string, knowledgeBaseIds: string[]) =>
        ok(
          raw.POST('/api/workspaces/{ws}/chats/{session}/knowledge-bases/attach/', {
            params: { path: { ws, session: chat } },
            body: { knowledge_base_ids: knowledgeBaseIds },
          }),
        ),
    },
    messages,
    documents: {
      list: (ws: string, query: Query<'documents_list'> = {}) => ok(raw.GET('/api/workspaces/{ws}/documents/', { params: { path: { ws }, query } })),
      get: (ws: string, id: string) => ok(raw.GET('/api/workspaces/{ws}/documents/{id}/', { params: { path: { ws, id } } })),
      delete: (ws: string, id: string) => ok(raw.DELETE('/api/workspaces/{ws}/documents/{id}/', { params: { path: { ws, id } } })),
      processingStatus: (ws: string, id: string) =>
        ok(raw.GET('/api/workspaces/{ws}/documents/{id}/processing-status/', { params: { path: { ws, id } } })),
      /**
       * The upload flow in one call: asks for a signed upload URL, PUTs the bytes there (no
       * Authorization header: the URL carries its own signature) and confirms the upload, which
       * queues processing. Returns the document as confirmed.
       */
      async upload(ws: string, input: UploadInput) {
        const blob = bytesOf(input.body);
        const { document, upload } = await ok(
          raw.POST('/api/workspaces/{ws}/documents/upload/', {
            params: { path: { ws } },
            body: { name: input.name, content_type: input.contentType, size: blob.size, knowledge_base_ids: input.knowledgeBaseIds ?? [] },
          }),
        );
        const put = await fetchImpl(new Request(upload.url, { method: upload.method, headers: upload.headers, body: blob }));
        if (!put.ok) throw await ApiError.read(put);
        await put.body?.cancel();
        await ok(raw.POST('/api/workspaces/{ws}/documents/{id}/confirm-upload/', { params: { path: { ws, id: document.id } } }));
        return ok(raw.GET('/api/workspaces/{ws}/documents/{id}/', { params: { path: { ws, id: document.id } } }));
      },
    },
    knowledgeBases: {
      list: (ws: string, query: Query<'knowledge_bases_list'> = {}) =>
        ok(raw.GET('/api/workspaces/{ws}/knowledge-bases/', { params: { path: { ws }, query } })),
      create: (ws: string, body: JsonBody<'knowledge_bases_create'>) =>
        ok(raw.POST('/api/workspaces/{ws}/knowledge-bases/', { params: { path: { ws } }, body })),
      get: (ws: string, id: string) => ok(raw.GET('/api/workspaces/{ws}/knowledge-bases/{id}/', { params: { path: { ws, id } } })),
      delete: (ws: string, id: string) => ok(raw.DELETE('/api/workspaces/{ws}/knowledge-bases/{id}/', { params: { path: { ws, id } } })),
      addDocuments: (ws: string, id: string, documentIds: string[]) =>
        ok(raw.POST('/api/workspaces/{ws}/knowledge-bases/{id}/add-documents/', { params: { path: { ws, id } }, body: { document_ids: documentIds } })),
      removeDocuments: (ws: string, id: string, documentIds: string[]) =>
        ok(
          raw.POST('/api/workspaces/{ws}/knowledge-bases/{id}/remove-documents/', { params: { path: { ws, id } }, body: { document_ids: documentIds } }),
        ),
      documents: (ws: string, id: string, query: Query<'knowledge_bases_documents'> = {}) =>
        ok(raw.GET('/api/workspaces/{ws}/knowledge-bases/{id}/documents/', { params: { path: { ws, id }, query } })),
    },
  };
}

/** The client `createClient` returns. */
export type WorkspaceAiClient = ReturnType<typeof createClient>;
