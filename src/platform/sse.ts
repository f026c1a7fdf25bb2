import type { FastifyReply } from 'fastify';
import { rateLimitHeaders } from './ratelimit/headers.js';
import { currentRequestContext } from './request-context.js';

/**
 * Server-sent events on a Fastify reply. Each event is an optional `id: N` line, `event: NAME`,
 * one `data: JSON` line and a blank line (JSON.stringify never emits a raw newline, so one data line always suffices);
 * `: ping` comments keep proxies from closing an idle stream.
 *
 * The stream takes over the raw response (`reply.hijack()`), so Fastify's serialisation and
 * error handler no longer apply: JSON errors must be sent before `open`. Writes after the client
 * went away are dropped silently; whoever produces the events keeps going (a disconnect does not
 * abort generation) and can look at `closed`.
 */
export interface EventStream {
  /** Sends an event; with `id`, an `id:` line first (what the client reattaches with, `Last-Event-ID`). */
  send(event: string, data: unknown, id?: number): void;
  /** `send` for data that is already JSON text. */
  sendEncoded(event: string, json: string, id?: number): void;
  /** Ends the response (idempotent). */
  end(): void;
  /** True once the client disconnected or `end` was called. */
  readonly closed: boolean;
}

export interface EventStreamOptions {
  headers?: Record<string, string>;
  heartbeatMs?: number;
}

export const SSE_HEARTBEAT_MS = 15_000;

export function openEventStream(reply: FastifyReply, options: EventStreamOptions = {}): EventStream {
  reply.hijack();
  const raw = reply.raw;
  // Headers hooks already set on the reply (CORS) first: hijacking skips Fastify's own sending.
  // Names are merged case-insensitively, so no header goes out twice.
  const headers: Record<string, string | number | string[]> = {};
  const set = (name: string, value: string | number | string[] | undefined) => {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  };
  for (const [name, value] of Object.entries(reply.getHeaders())) set(name, value);
  // Hijacked: the onSend hook that adds these to every other answer does not run.
  for (const [name, value] of Object.entries(rateLimitHeaders(currentRequestContext()))) set(name, value);
  for (const [name, value] of Object.entries({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': String(reply.request.id),
    ...options.headers,
  }))
    set(name, value);
  raw.writeHead(200, headers);
  raw.flushHeaders();

  let closed = false;
  const heartbeat = setInterval(() => write(': ping\n\n'), options.heartbeatMs ?? SSE_HEARTBEAT_MS);
  heartbeat.unref();
  // The response's close (not the request's, which fires once the body is read) marks a disconnect.
  raw.on('close', () => {
    closed = true;
    clearInterval(heartbeat);
  });

  function write(chunk: string) {
    if (closed || raw.destroyed || raw.writableEnded) return;
    raw.write(chunk);
  }

  return {
    send(event, data, id) {
      this.sendEncoded(event, JSON.stringify(data), id);
    },
    sendEncoded(event, json, id) {
      write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${json}\n\n`);
    },
    end() {
      clearInterval(heartbeat);
      if (!raw.writableEnded) raw.end();
      closed = true;
    },
    get closed() {
      return closed || raw.destroyed;
    },
  };
}
