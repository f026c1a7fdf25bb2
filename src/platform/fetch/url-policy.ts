import {
  type AllowList,
  CATEGORY_LABELS,
  EMPTY_ALLOW_LIST,
  checkAddress,
  connectAddress,
  normaliseHostname,
  parseAddress,
  parseAllowList,
} from './address-policy.js';
import { UrlNotAllowedError, type UrlRefusalReason } from './errors.js';

/** Longer URLs are refused: nothing legitimate needs more, and it bounds what we log and store. */
export const MAX_URL_LENGTH = 2048;

/**
 * Name suffixes that only ever mean "inside this network" (RFC 6761, RFC 6762, RFC 8375,
 * ICANN's `.internal`). Refused before any DNS lookup unless the exact name is allow-listed.
 */
const INTERNAL_SUFFIXES = ['localhost', 'local', 'internal', 'localdomain', 'home.arpa', 'intranet', 'lan'];

export interface UrlCheckOptions {
  /** URL_FETCH_ALLOWED_PRIVATE_HOSTS, raw or already parsed. */
  allowedPrivateHosts?: readonly string[] | AllowList;
  /** Wording of refusals: the user's URL, or a redirect it led to. */
  subject?: 'url' | 'redirect';
}

/** A URL that passed the static checks, with what the fetcher needs next. */
export interface CheckedUrl {
  url: URL;
  /** Normalised host name (lower case, no trailing dot, no brackets). */
  host: string;
  /** The host is an IP literal: the address to connect to (checked; IPv4-mapped given as IPv4). */
  literal: string | null;
  /** The host is listed by name in the allow list. */
  hostAllowed: boolean;
}

export function toAllowList(value: readonly string[] | AllowList | undefined): AllowList {
  if (!value) return EMPTY_ALLOW_LIST;
  return Array.isArray(value) ? parseAllowList(value as readonly string[]) : (value as AllowList);
}

/**
 * The static part of the rules, without DNS: http(s) only, no user info, at most 2048
 * characters, a port in 1-65535, no internal-only host names, and an IP-literal host (in any
 * notation) must be public or allow-listed. Used by the fetcher on every hop and by the
 * from-URL endpoint before queueing. Returns the parsed URL; throws UrlNotAllowedError.
 */
export function checkUrl(input: string | URL, options: UrlCheckOptions = {}): CheckedUrl {
  const allow = toAllowList(options.allowedPrivateHosts);
  const redirect = options.subject === 'redirect';
  // Each rule has two wordings: about the user's URL, or about where it redirected.
  const refuse = (reason: UrlRefusalReason, aboutUrl: string, aboutRedirect: string) =>
    new UrlNotAllowedError(redirect ? `The URL redirects to ${aboutRedirect}` : `The URL ${aboutUrl}`, reason);
  const tooLong = () =>
    refuse('too_long', `is longer than ${MAX_URL_LENGTH} characters.`, `a URL longer than ${MAX_URL_LENGTH} characters.`);

  const raw = String(input);
  if (raw.length > MAX_URL_LENGTH) throw tooLong();
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('invalid_url', 'is not a valid absolute URL.', 'an invalid URL.');
  }
  // Normalisation can lengthen a URL (percent-encoding), so check the form we would send too.
  if (url.href.length > MAX_URL_LENGTH) throw tooLong();
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse('scheme', 'must use http or https.', 'a URL that is not http or https, which is not allowed.');
  }
  if (url.username !== '' || url.password !== '') {
    throw refuse(
      'userinfo',
      'must not contain a user name or password.',
      'a URL with a user name or password, which is not allowed.',
    );
  }
  // WHATWG parsing already refuses ports above 65535; port 0 cannot be connected to.
  if (url.port === '0') throw refuse('port', 'has an invalid port.', 'a URL with an invalid port.');
  const host = normaliseHostname(url.hostname);
  if (!host) throw refuse('host_name', 'has no host.', 'a URL without a host.');
  const hostAllowed = allow.names.has(host);

  const ip = parseAddress(host);
  if (ip) {
    const verdict = checkAddress(ip, allow, hostAllowed);
    if (!verdict.allowed) {
      const what = `${CATEGORY_LABELS[verdict.category]}, which is not allowed.`;
      throw refuse('address', `points to ${what}`, what);
    }
    return { url, host, literal: connectAddress(ip), hostAllowed };
  }

  if (!hostAllowed) {
    if (INTERNAL_SUFFIXES.some((s) => host === s || host.endsWith(`.${s}`))) {
      throw refuse(
        'host_name',
        'names an internal-only host, which is not allowed.',
        'an internal-only host, which is not allowed.',
      );
    }
    if (!host.includes('.')) {
      throw refuse(
        'host_name',
        'must name a public host with a domain (single-label names are internal).',
        'a single-label (internal) host name, which is not allowed.',
      );
    }
  }
  return { url, host, literal: null, hostAllowed };
}

/** `checkUrl` for callers that only want the URL: throws UrlNotAllowedError, else returns it. */
export function assertPublicUrl(input: string | URL, options: UrlCheckOptions = {}): URL {
  return checkUrl(input, options).url;
}
