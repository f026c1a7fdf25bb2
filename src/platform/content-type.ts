import { parse } from 'content-type';

/** A Content-Type header's media type (lower case, '' when absent) and its charset parameter. */
export interface MediaType {
  mime: string;
  /** Lower case; undefined when the header names none. */
  charset?: string;
}

/**
 * Reads a Content-Type header (RFC 9110) with the `content-type` package. Its parser is lenient:
 * a header from a remote server or a client that is malformed yields what could be read, never
 * an exception.
 */
export function parseMediaType(header: string | undefined | null): MediaType {
  if (!header) return { mime: '' };
  const parsed = parse(header);
  const charset = parsed.parameters.charset;
  return { mime: parsed.type.trim().toLowerCase(), ...(charset ? { charset: charset.toLowerCase() } : {}) };
}
