import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { creditUsage } from '../../src/modules/billing/billing.table.js';
import { messages } from '../../src/modules/messages/messages.table.js';
import { type TestApp, type TestOverrides, useTestApp } from './app.js';
import { addMember, newUser, newWorkspace, type TestUser, type TestWorkspace } from './factories.js';
import { type FakeModelServer, startFakeModelServer } from './fake-model-server.js';

/*
 * Helpers for the messages tests: an app wired to a fake model server, an SSE parser, a real
 * HTTP streaming client (for stop and disconnect tests, which app.inject cannot express), and a
 * small chat "world" (workspace, chat owner, sharee, read-only member).
 */

export interface ChatTestApp {
  t: TestApp;
  fake: FakeModelServer;
}

/**
 * One app per test file whose provider base URLs point at a fake model server. The fake starts
 * BEFORE the app (the app reads provider URLs from its env when it is built) and is reset before
 * each test. Throttles are lifted unless `env` sets them: user ids restart at 1 after every
 * truncation, so a file's tests would otherwise share one user's counter.
 */
export function useChatTestApp(env: Record<string, string> = {}, overrides: TestOverrides = {}): ChatTestApp {
  const fake = {} as FakeModelServer;
  const appEnv: Record<string, string> = {};
  beforeAll(async () => {
    Object.assign(fake, await startFakeModelServer());
    Object.assign(appEnv, fake.env, { THROTTLE_CHAT_MESSAGES: '10000/minute' }, env);
  });
  afterAll(async () => {
    await fake.close?.();
  });
  const t = useTestApp(appEnv, overrides);
  beforeEach(() => {
    fake.reset();
  });
  return { t, fake };
}

// --- Server-sent events ----------------------------------------------------------------------

export interface SseEvent {
  event: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests index freely into event data
  data: any;
}

/** Parses an event-stream body into events (comment lines such as `: ping` are skipped). */
export function parseSse(body: string): SseEvent[] {
  return parseSseWithIds(body).map(({ event, data }) => ({ event, data }));
}

/** `parseSse` keeping each event's `id:` (undefined when it has none). */
export function parseSseWithIds(body: string): Array<SseEvent & { id: string | undefined }> {
  const events: Array<SseEvent & { id: string | undefined }> = [];
  // Only complete events (a block still arriving is left for the next look).
  const blocks = body.split(/\r?\n\r?\n/);
  for (const block of blocks.slice(0, -1)) {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (!line || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (data.length) events.push({ event, data: JSON.parse(data.join('\n')), id });
  }
  return events;
}

/** The text of every `delta` event, joined. */
export const deltaText = (events: SseEvent[]) =>
  events
    .filter((e) => e.event === 'delta')
    .map((e) => e.data.text as string)
    .join('');

// --- Real HTTP ---------------------------------------------------------------------------------

const listening = new WeakMap<FastifyInstance, Promise<string>>();

/** Makes the app listen on an ephemeral port (once) and returns its base URL. */
export function listenUrl(app: FastifyInstance): Promise<string> {
  let url = listening.get(app);
  if (!url) {
    url = app.listen({ port: 0, host: '127.0.0.1' }).then(() => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
    listening.set(app, url);
  }
  return url;
}

export interface HttpStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body received so far. */
  readonly raw: string;
  /** Events parsed from the body received so far. */
  events(): SseEvent[];
  /** Resolves once `predicate` holds for the events received (rejects after `timeoutMs`). */
  waitFor(predicate: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<SseEvent[]>;
  /** Resolves when the response has ended or the connection closed. */
  ended: Promise<void>;
  /** Cuts the connection, as a client that goes away. */
  destroy(): void;
}

/** POSTs JSON (or GETs) over real HTTP and exposes the response as it streams in. */
export function openHttpStream(
  baseUrl: string,
  path: string,
  options: { as?: { token: string }; body?: unknown; headers?: Record<string, string>; method?: 'GET' | 'POST' } = {},
): Promise<HttpStream> {
  const method = options.method ?? 'POST';
  const payload = method === 'GET' ? '' : JSON.stringify(options.body ?? {});
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(method === 'GET' ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        accept: 'text/event-stream',
        ...(options.as ? { authorization: `Bearer ${options.as.token}` } : {}),
        ...options.headers,
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let raw = '';
      const listeners = new Set<() => void>();
      const notify = () => {
        for (const listener of [...listeners]) listener();
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        notify();
      });
      // A destroyed socket makes the response emit 'error' (aborted); the test asked for it.
      res.on('error', () => undefined);
      req.removeListener('error', reject);
      req.on('error', () => undefined);
      const ended = new Promise<void>((done) => {
        res.on('close', () => {
          done();
          notify();
        });
      });
      let closed = false;
      void ended.then(() => (closed = true));
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        get raw() {
          return raw;
        },
        events: () => parseSse(raw),
        waitFor(predicate, timeoutMs = 15_000) {
          return new Promise((done, fail) => {
            const check = () => {
              const events = parseSse(raw);
              if (predicate(events)) {
                cleanup();
                done(events);
              } else if (closed) {
                cleanup();
                fail(new Error(`stream ended before the condition held; body:\n${raw}`));
              }
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`timed out after ${timeoutMs} ms waiting for stream events; body:\n${raw}`));
            }, timeoutMs);
            const cleanup = () => {
              clearTimeout(timer);
              listeners.delete(check);
            };
            listeners.add(check);
            check();
          });
        },
        ended,
        destroy() {
          req.destroy();
          res.destroy();
        },
      });
    });
    req.end(payload);
  });
}

// --- A chat world ------------------------------------------------------------------------------

export interface ChatWorld {
  ws: TestWorkspace;
  /** The workspace owner (a member who neither owns the chat nor has it shared: reads it only when public). */
  wsOwner: TestUser;
  /** Owner of the chat. */
  alice: TestUser;
  /** The chat is shared with bob. */
  bob: TestUser;
  /** A plain member; reads the chat only when it is public. */
  carol: TestUser;
  chat: { id: string; ai_model: string };
  /** `/api/workspaces/{ws}/chats/{chat}/messages/` */
  base: string;
}

export interface ChatOptions {
  ai_model?: string;
  agent_framework?: 'tools' | 'direct';
  system_prompt?: string;
  temperature?: number;
  model_parameters?: Record<string, unknown>;
  isPublic?: boolean;
  /** Runs after the workspace exists and before the chat is created (to subscribe to a plan). */
  beforeChat?: (ws: TestWorkspace, wsOwner: TestUser) => Promise<unknown>;
}

export async function chatWorld(t: TestApp, options: ChatOptions = {}): Promise<ChatWorld> {
  const wsOwner = await newUser(t);
  const alice = await newUser(t);
  const bob = await newUser(t);
  const carol = await newUser(t);
  const ws = await newWorkspace(t, wsOwner);
  for (const user of [alice, bob, carol]) await addMember(t, ws, user);
  await options.beforeChat?.(ws, wsOwner);
  const { isPublic, beforeChat: _ignored, ...body } = options;
  const created = await t.post(`/api/workspaces/${ws.id}/chats/`, { name: 'Test chat', ...body }, alice);
  expect(created.statusCode, created.body).toBe(201);
  const chat = created.json() as { id: string; ai_model: string };
  const shared = await t.post(`/api/workspaces/${ws.id}/chats/${chat.id}/share/`, { email: bob.email }, alice);
  expect(shared.statusCode, shared.body).toBe(201);
  if (isPublic) {
    const toggled = await t.post(`/api/workspaces/${ws.id}/chats/${chat.id}/toggle-public/`, {}, alice);
    expect(toggled.json().is_public).toBe(true);
  }
  return { ws, wsOwner, alice, bob, carol, chat, base: `/api/workspaces/${ws.id}/chats/${chat.id}/messages/` };
}

/** A streamed request through app.inject, with its events parsed. */
export async function injectStream(t: TestApp, url: string, body: unknown, as: { token: string }, headers: Record<string, string> = {}) {
  const res = await t.request('POST', url, { as, body, headers });
  const events = res.headers['content-type']?.toString().startsWith('text/event-stream') ? parseSse(res.body) : [];
  return { res, events, done: events.find((e) => e.event === 'done')?.data };
}

/** Every message row of a chat, oldest first. */
export async function messageRows(t: TestApp, chatId: string) {
  const rows = await t.deps.database.db.select().from(messages).where(eq(messages.sessionId, chatId));
  return rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

/** The credit ledger rows of a workspace. */
export async function ledgerRows(t: TestApp, workspaceId: string) {
  return t.deps.database.db.select().from(creditUsage).where(eq(creditUsage.workspaceId, workspaceId));
}

/** The chat messages (role + text) the model received in one recorded request (OpenAI Chat Completions). */
export function openaiTurns(body: { messages: Array<{ role: string; content: unknown }> }) {
  return body.messages.map((m) => ({
    role: m.role,
    text:
      typeof m.content === 'string'
        ? m.content
        : (m.content as Array<{ type: string; text?: string }>)
            .filter((p) => p.type === 'text')
            .map((p) => p.text)
            .join(''),
  }));
}
