import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DbOrTx } from '../../db/client.js';
import { sha256Hex } from '../secrets.js';
import { idempotencyErrors } from './idempotency.errors.js';
import * as repo from './idempotency.repo.js';

/*
 * `Idempotency-Key` for the routes that opt in with `config: { idempotent: true }`. The rules
 * are in this folder's README; in short: the first request with a key claims it and runs; its
 * 2xx response is stored and replayed for the same key and request until the key expires; any
 * other outcome releases the key so the client may retry with it.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Honour the `Idempotency-Key` request header (see src/platform/idempotency/README.md). */
    idempotent?: boolean;
  }
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
/** An in-progress record not finished within this time belongs to a crashed process. */
export const ABANDON_AFTER_SECONDS = 300;
/** Response headers stored with a response and replayed (the rest are per-request, such as X-Request-Id). */
const STORED_HEADERS = ['content-type', 'location', 'x-stream-id'] as const;
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

export interface IdempotencyOptions {
  db: DbOrTx;
  /** How long a stored response is replayed (IDEMPOTENCY_TTL_SECONDS). */
  ttlSeconds: number;
  /** How long a duplicate waits for the first request before answering 409 (default 10 s). */
  waitMs?: number;
  /** Delay between two looks at the first request's record while waiting (default 75 ms). */
  pollMs?: number;
}

/**
 * JSON with every object's keys sorted, so two bodies that differ only in key order (or in
 * whitespace) get the same fingerprint. `undefined` (no body) is `null`.
 */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value ?? null, (_key, inner: unknown) =>
      inner && typeof inner === 'object' && !Array.isArray(inner)
        ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : inner,
    ) ?? 'null'
  );
}

/**
 * What "the same request" means: method, path with its query string, and the body as the route
 * parsed and validated it. A multipart body is read by the handler as a stream, after this runs,
 * so it is not compared: only the marker `multipart` stands for it.
 */
export function requestFingerprint(method: string, url: string, body: unknown, multipart: boolean): string {
  return sha256Hex(`${method}\n${url}\n${multipart ? 'multipart' : canonicalJson(body)}`);
}

interface Claim {
  userId: number;
  key: string;
  token: string;
  /** Set once the outcome was stored or the claim released. */
  settled: boolean;
}

function readKey(request: FastifyRequest): string | undefined {
  const value = request.headers[IDEMPOTENCY_HEADER];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value)) throw idempotencyErrors.invalidKey();
  return value;
}

function isMultipart(request: FastifyRequest): boolean {
  return /^multipart\//i.test(request.headers['content-type'] ?? '');
}

function storedHeaders(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of STORED_HEADERS) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}

/**
 * Installs the `Idempotency-Key` hooks on an encapsulated context (after authentication: keys
 * belong to the authenticated user). Routes registered in it opt in with `config.idempotent`.
 */
export function registerIdempotency(api: FastifyInstance, options: IdempotencyOptions): void {
  const { db, ttlSeconds } = options;
  const waitMs = options.waitMs ?? 10_000;
  const pollMs = options.pollMs ?? 75;
  const claims = new WeakMap<FastifyRequest, Claim>();

  async function settle(request: FastifyRequest, claim: Claim, response: repo.StoredResponse | null): Promise<void> {
    claim.settled = true;
    const { userId, key, token } = claim;
    try {
      if (response) {
        if (await repo.completeKey(db, userId, key, token, response)) return;
        request.log.warn({ idempotencyKey: key }, 'idempotency claim was taken over before its response was stored');
      } else {
        await repo.releaseKey(db, userId, key, token);
      }
    } catch (error) {
      // The response still goes out; an unreleased claim is taken over once abandoned.
      request.log.error({ err: error, idempotencyKey: key }, 'could not record the outcome of an idempotent request');
      if (response) await repo.releaseKey(db, userId, key, token).catch(() => undefined);
    }
  }

  // After validation, so the fingerprint sees the body the handler will see.
  api.addHook('preHandler', async (request, reply) => {
    if (!request.routeOptions.config.idempotent) return;
    const key = readKey(request);
    const userId = request.user?.id;
    if (key === undefined || userId === undefined) return;
    const fingerprint = requestFingerprint(request.method, request.url, request.body, isMultipart(request));
    const deadline = Date.now() + waitMs;

    for (;;) {
      const token = await repo.claimKey(db, { userId, key, fingerprint, ttlSeconds, abandonAfterSeconds: ABANDON_AFTER_SECONDS });
      if (token) {
        claims.set(request, { userId, key, token, settled: false });
        return;
      }
      // Someone holds the key: look until it is completed, released (then claim it) or the wait ends.
      for (;;) {
        const held = await repo.findKey(db, userId, key, ABANDON_AFTER_SECONDS);
        if (!held || held.takeable) break;
        if (held.fingerprint !== fingerprint) throw idempotencyErrors.keyReused();
        if (held.response) {
          const { status, headers, body } = held.response;
          reply.code(status).headers(headers).header(REPLAYED_HEADER, 'true');
          return reply.send(body);
        }
        // A client that went away stops a waiting duplicate (nobody would read its answer).
        if (Date.now() >= deadline || request.raw.destroyed) throw idempotencyErrors.inProgress();
        await sleep(pollMs);
      }
    }
  });

  // Every reply of a claimed request passes here, errors included (the error handler sends them),
  // and also when the client has disconnected: Fastify lets the handler run to the end and still
  // calls onSend. So the outcome decides, not the connection: a reply that was produced (a chat
  // reply is saved even when its client has gone) is stored, and a retry replays it instead of
  // doing the work twice. Releasing the claim on disconnect would invite exactly that.
  api.addHook('onSend', async (request, reply, payload) => {
    const claim = claims.get(request);
    if (!claim || claim.settled) return payload;
    const ok = reply.statusCode >= 200 && reply.statusCode < 300;
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    if (ok && body === null) request.log.warn({ idempotencyKey: claim.key }, 'a streamed response cannot be stored for replay');
    await settle(request, claim, ok && body !== null ? { status: reply.statusCode, headers: storedHeaders(reply), body } : null);
    return payload;
  });

  // A safety net for a reply that bypassed onSend (a hijacked one): never leave the claim behind.
  api.addHook('onResponse', async (request) => {
    const claim = claims.get(request);
    if (claim && !claim.settled) await settle(request, claim, null);
  });
}

/**
 * Deletes up to `limit` records nobody needs any more (expired responses, claims abandoned by a
 * crashed process); returns how many. Meant for a periodic maintenance task.
 */
export function deleteExpiredIdempotencyKeys(db: DbOrTx, limit = 1000): Promise<number> {
  return repo.deleteTakeableKeys(db, limit, ABANDON_AFTER_SECONDS);
}
