import { STATUS_CODES } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { request } from 'undici';

/** undici's `request`, loaded on first use (a dynamic import per call costs a module resolution each time). */
let undiciRequest: typeof request | undefined;

/**
 * The `fetch` the provider clients (AI SDK) call: undici's `request` under a WHATWG `Response`.
 *
 * Node's global fetch is the same HTTP client behind the WHATWG layers (request and response
 * objects, body mixins, header guards); on the streamed send's path those cost time to first
 * byte (p99 most) and ~20 KiB of heap per open stream (docs/decisions.md, "Hot paths", second
 * pass), for an API call that needs none of them. Same connection pool (the global dispatcher),
 * same timeouts, same abort signal, and failures look like fetch's: an abort rejects with the
 * signal's reason, any other failure to get an answer is `TypeError('fetch failed', {cause})`,
 * which the SDK classifies (and retries) as a connection failure.
 *
 * Differences from fetch, none of which a model API call relies on: no redirects followed (a
 * 3xx is the answer: the SDK reports it as an API error); `accept-encoding: identity` is sent
 * unless the caller set one, and a gzip, deflate or br answer anyway is decoded as fetch would.
 * A call this does not cover (a `Request` object, a body other than a string or bytes, such as a
 * multipart upload of audio, a redirect mode other than `follow`, as the SDK's own guarded
 * download of URLs uses) goes to the global fetch unchanged.
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
  headers['accept-encoding'] ??= 'identity';
  const method = (init?.method ?? 'GET').toUpperCase();
  const signal = init?.signal ?? undefined;
  const send = (undiciRequest ??= (await import('undici')).request);
  let answer: Awaited<ReturnType<typeof request>>;
  try {
    answer = await send(url, { method: method as 'GET', headers, body: body ?? null, signal });
  } catch (error) {
    throw fetchFailure(error, signal);
  }

  const status = answer.statusCode;
  try {
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const item of value) responseHeaders.append(name, item);
      else if (value !== undefined) responseHeaders.set(name, value);
    }
    const empty = method === 'HEAD' || status === 204 || status === 205 || status === 304;
    if (empty) answer.body.resume();
    return new Response(empty ? null : (Readable.toWeb(decoded(answer.body, answer.headers['content-encoding'])) as ReadableStream<Uint8Array>), {
      status,
      statusText: STATUS_CODES[status] ?? '',
      headers: responseHeaders,
    });
  } catch (error) {
    // A status a Response cannot carry, a header it refuses: free the connection, fail like fetch.
    discard(answer.body);
    throw fetchFailure(error, signal);
  }
};

/** An abort as the signal's reason (as fetch rejects); anything else as fetch's `TypeError('fetch failed')`. */
function fetchFailure(error: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason ?? error;
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'AbortError' || name === 'TimeoutError') return error;
  return new TypeError('fetch failed', { cause: error });
}

/**
 * The body decoded as fetch decodes it (a gateway may compress despite `identity`): gzip,
 * deflate or br; any other coding is passed through as is, as fetch does.
 */
function decoded(body: Readable, encoding: string | string[] | undefined): Readable {
  const coding = (Array.isArray(encoding) ? encoding.join(',') : (encoding ?? '')).trim().toLowerCase();
  const decoder =
    coding === 'gzip' || coding === 'x-gzip'
      ? createGunzip()
      : coding === 'deflate'
        ? createInflate()
        : coding === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (!decoder) return body;
  // A failure on either side ends the other; the decoder's stream carries it to the reader.
  pipeline(body, decoder, () => undefined);
  return decoder;
}

/** Drops an answer's body and its connection (undici reports the abort as an error event: expected here). */
function discard(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}
