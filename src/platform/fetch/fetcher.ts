import { lookup } from 'node:dns/promises';
import { rootCertificates } from 'node:tls';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type * as Undici from 'undici';
import type { buildConnector, Dispatcher } from 'undici';
import { parseMediaType } from '../content-type.js';
import { CATEGORY_LABELS, checkAddress, connectAddress, parseAddress, parseAllowList } from './address-policy.js';
import { UrlFetchError, UrlNotAllowedError, type UrlRefusalReason } from './errors.js';
import { type CheckedUrl, checkUrl } from './url-policy.js';
import { abortable, discard, errorCode, firstHeader, flattenHeaders, formatBytes, formatSeconds, MiB } from './fetch-helpers.js';

export { UrlFetchError, UrlNotAllowedError } from './errors.js';
export type { UrlFetchErrorCode, UrlRefusalReason } from './errors.js';
export { MAX_URL_LENGTH, assertPublicUrl, checkUrl } from './url-policy.js';
export type { CheckedUrl, UrlCheckOptions } from './url-policy.js';
export { parseAllowList } from './address-policy.js';
export type { AllowList } from './address-policy.js';
export { classifyUrl, youtubeVideoId, youtubeWatchUrl } from './youtube.js';
export type { UrlKind } from './youtube.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** DNS: every address a host name resolves to. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface SafeFetcherOptions {
  /** URL_FETCH_ALLOWED_PRIVATE_HOSTS: host names and CIDRs an operator allows although private. */
  allowedPrivateHosts: readonly string[];
  /** Largest body accepted, after decompression (default 10 MiB). */
  maxBytes?: number;
  /** Budget for the whole fetch, every hop and the body included (default 15 s). */
  timeoutMs?: number;
  /** Redirects followed before giving up (default 5). */
  maxRedirects?: number;
  userAgent?: string;
  /** Default: the system resolver (`dns.lookup`, all addresses). Tests inject their own. */
  resolver?: Resolver;
  /** Certificate authorities trusted in addition to Node's bundled ones (intranet hosts, tests). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Called when a URL, a redirect or a resolved address is refused (metrics). */
  onRefused?: (reason: UrlRefusalReason) => void;
  /** Called for every TCP connection, with the checked address it goes to (audit logs, tests). */
  onConnect?: (event: { hostname: string; address: string; port: number }) => void;
}

export interface SafeFetchInit {
  /** Extra request headers; hop-by-hop and framing headers (Host, Connection, ...) are ignored. */
  headers?: Record<string, string>;
  /** The Accept header (default `*\/*`). */
  accept?: string;
  /** Cancels the fetch (job shutdown); the abort reason is rethrown as it is. */
  signal?: AbortSignal;
}

export interface SafeResponse {
  /** The URL of the final hop (after redirects). */
  url: string;
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The media type, lower case, without parameters (`text/html`); '' when absent. */
  contentType: string;
  /** The `charset` parameter of Content-Type, lower case, or null. */
  charset: string | null;
  /** Decoded (Content-Encoding removed), at most maxBytes. */
  body: Buffer;
}

export interface SafeFetcher {
  /** GET `url`, following redirects; every hop is checked. Throws UrlNotAllowedError or UrlFetchError. */
  fetch(url: string, init?: SafeFetchInit): Promise<SafeResponse>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const DEFAULT_USER_AGENT = 'Mozilla/5.0 (compatible; WorkspaceAI-Fetcher/1.0)';
/** Caller headers that would change framing, routing or the connection; we own these. */
const RESERVED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'content-length',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'accept-encoding',
]);
/** Dropped when a redirect leaves the origin (as browsers do for Authorization). */
const CREDENTIAL_HEADERS = ['authorization', 'cookie'];
/** Connection errors after which the next checked address of the same host is tried. */
const CONNECT_ERRORS = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family }));

const unzip = {
  gzip: promisify(zlib.gunzip),
  inflate: promisify(zlib.inflate),
  inflateRaw: promisify(zlib.inflateRaw),
  brotli: promisify(zlib.brotliDecompress),
};

export function createSafeFetcher(options: SafeFetcherOptions): SafeFetcher {
  const allow = parseAllowList(options.allowedPrivateHosts);
  const maxBytes = options.maxBytes ?? 10 * MiB;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const maxRedirects = options.maxRedirects ?? 5;
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  const resolver = options.resolver ?? systemResolver;
  const extraCa = options.ca === undefined ? [] : Array.isArray(options.ca) ? options.ca : [options.ca];
  // undici is loaded on the first fetch, not when the service starts.
  let undici: Promise<{ Client: typeof Undici.Client; baseConnect: buildConnector.connector }> | undefined;
  const loadUndici = () =>
    (undici ??= import('undici').then(({ Client, buildConnector }) => ({
      Client,
      baseConnect: buildConnector({
        timeout: Math.min(timeoutMs, 10_000),
        ...(extraCa.length ? { ca: [...rootCertificates, ...extraCa] } : {}),
      }),
    })));

  /** A connector that ignores the host name and connects to one address we already checked. */
  const pinned =
    (baseConnect: buildConnector.connector, address: string, checked: CheckedUrl): buildConnector.connector =>
    (connectOptions, callback) => {
      const port = Number(connectOptions.port) || (connectOptions.protocol === 'https:' ? 443 : 80);
      options.onConnect?.({ hostname: checked.host, address, port });
      baseConnect(
        {
          ...connectOptions,
          hostname: address,
          // SNI and certificate checks use the name the user gave (IP literals get no SNI).
          servername: checked.literal ? undefined : checked.host,
        },
        callback,
      );
    };

  async function resolveChecked(checked: CheckedUrl, subject: 'url' | 'redirect', signal: AbortSignal) {
    if (checked.literal) return [checked.literal];
    let answers: ResolvedAddress[];
    try {
      answers = await abortable(resolver(checked.url.hostname), signal);
    } catch (error) {
      if (signal.aborted) throw error;
      throw new UrlFetchError('url_fetch_failed', `The host ${checked.host} could not be resolved.`, error);
    }
    if (answers.length === 0) {
      throw new UrlFetchError('url_fetch_failed', `The host ${checked.host} could not be resolved.`);
    }
    const addresses: string[] = [];
    // Every answer must pass: a name resolving to one public and one private address is refused,
    // since we cannot know which one a later connection would have used.
    for (const answer of answers) {
      const ip = parseAddress(answer.address);
      const verdict = ip ? checkAddress(ip, allow, checked.hostAllowed) : null;
      if (!ip || !verdict?.allowed) {
        const label = verdict && !verdict.allowed ? CATEGORY_LABELS[verdict.category] : 'an invalid address';
        const who = subject === 'redirect' ? 'The URL redirects to a host that' : `The host ${checked.host}`;
        throw new UrlNotAllowedError(`${who} resolves to ${label}, which is not allowed.`, 'address');
      }
      addresses.push(connectAddress(ip));
    }
    return addresses;
  }

  /** One GET to one checked URL, trying its checked addresses in turn until one connects. */
  async function requestHop(
    checked: CheckedUrl,
    addresses: string[],
    headers: Record<string, string>,
    signal: AbortSignal,
  ) {
    const { Client, baseConnect } = await loadUndici();
    let lastError: unknown;
    for (const address of addresses) {
      const client = new Client(checked.url.origin, {
        connect: pinned(baseConnect, address, checked),
        // The overall deadline aborts `signal`; these only keep undici's own defaults out of the way.
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        keepAliveTimeout: 1,
      });
      try {
        const response = await client.request({
          method: 'GET',
          path: `${checked.url.pathname}${checked.url.search}`,
          headers,
          signal,
        });
        return { client, response };
      } catch (error) {
        lastError = error;
        await client.destroy().catch(() => undefined);
        if (signal.aborted || !CONNECT_ERRORS.has(errorCode(error))) break;
      }
    }
    throw lastError;
  }

  async function readBody(response: Dispatcher.ResponseData, encoding: string): Promise<Buffer> {
    const declared = Number(response.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      discard(response.body);
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > maxBytes) {
        discard(response.body);
        throw tooLarge();
      }
      chunks.push(chunk);
    }
    return decode(Buffer.concat(chunks, total), encoding);
  }

  async function decode(raw: Buffer, contentEncoding: string): Promise<Buffer> {
    // Decoders are capped at maxBytes of output, so a small compressed bomb cannot blow up memory.
    const limits = { maxOutputLength: maxBytes };
    const codings = contentEncoding
      .toLowerCase()
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c && c !== 'identity')
      .reverse();
    let body = raw;
    for (const coding of codings) {
      try {
        if (coding === 'gzip' || coding === 'x-gzip') body = await unzip.gzip(body, limits);
        else if (coding === 'br') body = await unzip.brotli(body, limits);
        else if (coding === 'deflate') {
          // Servers send both zlib-wrapped and raw deflate under this name.
          const zlibWrapped = body;
          body = await unzip.inflate(zlibWrapped, limits).catch((error: unknown) => {
            if (errorCode(error) === 'ERR_BUFFER_TOO_LARGE') throw error;
            return unzip.inflateRaw(zlibWrapped, limits);
          });
        } else throw new UrlFetchError('url_fetch_failed', `The server sent an unsupported encoding (${coding}).`);
      } catch (error) {
        if (error instanceof UrlFetchError) throw error;
        if (errorCode(error) === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
        throw new UrlFetchError('url_fetch_failed', 'The server sent a corrupt compressed body.', error);
      }
    }
    return body;
  }

  const tooLarge = () =>
    new UrlFetchError('url_too_large', `The page is larger than the ${formatBytes(maxBytes)} limit.`);

  async function run(url: string, init: SafeFetchInit, signal: AbortSignal): Promise<SafeResponse> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(init.headers ?? {})) {
      if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
    }
    headers['user-agent'] = headers['user-agent'] ?? userAgent;
    headers.accept = init.accept ?? headers.accept ?? '*/*';
    headers['accept-encoding'] = 'gzip, deflate, br';

    let checked = checkUrl(url, { allowedPrivateHosts: allow });
    let subject: 'url' | 'redirect' = 'url';
    for (let hop = 0; ; hop += 1) {
      const addresses = await resolveChecked(checked, subject, signal);
      let hopResult: Awaited<ReturnType<typeof requestHop>>;
      try {
        hopResult = await requestHop(checked, addresses, headers, signal);
      } catch (error) {
        if (signal.aborted) throw error;
        throw new UrlFetchError('url_fetch_failed', `Could not connect to ${checked.host}.`, error);
      }
      const { client, response } = hopResult;
      try {
        const location = firstHeader(response.headers.location);
        if (REDIRECTS.has(response.statusCode) && location) {
          discard(response.body);
          if (hop >= maxRedirects) {
            throw new UrlFetchError('url_too_many_redirects', `The URL redirected more than ${maxRedirects} times.`);
          }
          let next: URL;
          try {
            next = new URL(location, checked.url);
          } catch {
            throw new UrlNotAllowedError('The URL redirects to an invalid address.', 'invalid_url');
          }
          const previousOrigin = checked.url.origin;
          // Re-checked like a URL the user typed: scheme, user info, host name, literal address.
          checked = checkUrl(next.href, { allowedPrivateHosts: allow, subject: 'redirect' });
          subject = 'redirect';
          if (checked.url.origin !== previousOrigin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
          continue;
        }
        const responseHeaders = flattenHeaders(response.headers);
        const encoding = responseHeaders['content-encoding'] ?? '';
        const body = await readBody(response, encoding);
        if (encoding && !/^\s*identity\s*$/i.test(encoding)) {
          // The body is decoded, so these no longer describe it.
          delete responseHeaders['content-encoding'];
          delete responseHeaders['content-length'];
        }
        const { mime, charset } = parseMediaType(responseHeaders['content-type']);
        return {
          url: checked.url.href,
          status: response.statusCode,
          headers: responseHeaders,
          contentType: mime,
          charset: charset ?? null,
          body,
        };
      } catch (error) {
        if (error instanceof UrlFetchError || error instanceof UrlNotAllowedError || signal.aborted) throw error;
        throw new UrlFetchError('url_fetch_failed', `The connection to ${checked.host} failed.`, error);
      } finally {
        await client.destroy().catch(() => undefined);
      }
    }
  }

  return {
    async fetch(url, init = {}) {
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new Error('deadline')), timeoutMs);
      const signal = init.signal ? AbortSignal.any([deadline.signal, init.signal]) : deadline.signal;
      try {
        return await run(url, init, signal);
      } catch (error) {
        if (init.signal?.aborted) throw init.signal.reason ?? error;
        if (error instanceof UrlNotAllowedError) options.onRefused?.(error.reason);
        if (deadline.signal.aborted) {
          throw new UrlFetchError('url_timeout', `The URL did not respond within ${formatSeconds(timeoutMs)}.`, error);
        }
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
