import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import { request } from 'undici';

/**
 * The `fetch` the provider clients (AI SDK) call: undici's `request` under a WHATWG `Response`.
 *
 * Node's global fetch is the same HTTP client behind the WHATWG layers (request and response
 * objects, body mixins, header guards); on the streamed send's path those cost ~0.25 ms of the
 * time to first byte at p50 and several ms at p99 on this machine (bench/RESULTS.md, "provider
 * fetch"), for an API call that needs none of them. Same connection pool (the global dispatcher),
 * same timeouts, same abort signal.
 *
 * Differences from fetch, none of which a model API call relies on: no redirects followed (a
 * 3xx is the answer: the SDK reports it as an API error), no transparent decompression (no
 * `accept-encoding` is sent, so servers answer uncompressed). A call this does not cover (a
 * `Request` object, a body other than a string or bytes, such as a multipart upload of audio, a
 * redirect mode other than `follow`) goes to the global fetch unchanged.
 */
export const providerFetch: typeof fetch = async (input, init) => {
  const body = init?.body;
  const plainBody = body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : undefined;
  if (url === undefined || !plainBody || (init?.redirect !== undefined && init.redirect !== 'follow')) return fetch(input, init);

  const headers: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const method = (init?.method ?? 'GET').toUpperCase();
  const answer = await request(url, { method: method as 'GET', headers, body: body ?? null, signal: init?.signal ?? undefined });

  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const item of value) responseHeaders.append(name, item);
    else if (value !== undefined) responseHeaders.set(name, value);
  }
  const status = answer.statusCode;
  const empty = method === 'HEAD' || status === 204 || status === 304;
  if (empty) answer.body.resume();
  return new Response(empty ? null : (Readable.toWeb(answer.body) as ReadableStream<Uint8Array>), {
    status,
    statusText: STATUS_CODES[status] ?? '',
    headers: responseHeaders,
  });
};
