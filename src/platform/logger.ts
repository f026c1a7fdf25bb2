import { type DestinationStream, type Logger, pino, stdSerializers } from 'pino';
import { isServerError } from '../db/errors.js';

/*
 * The process logger. Secrets never reach a log line: passwords and their hashes, tokens (auth,
 * reset, activation, invitation), API keys, the Authorization, Cookie and Payment-Signature
 * headers, URL signatures, and the values a failed SQL statement carried. Four layers, each for
 * what the others cannot see:
 * 1. redaction of known fields wherever a request, a reply, headers or a body are logged;
 * 2. the error serializer: a database error keeps its message (values cut out) and code only;
 *    Drizzle's wrapper keeps its SQL text without the parameters;
 * 3. the request serializer: the URL without the values of credential-like query parameters,
 *    and cut to a bounded length;
 * 4. a last pass over every written line for things that look like a secret whatever field
 *    they hide in (`wsai_` API keys, argon2 hashes, Bearer/Token credentials).
 */

// --- 1. redaction ------------------------------------------------------------------------------

/** Headers that carry credentials. */
const SECRET_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'payment-signature', 'x-api-key'];
/** Body and object fields that carry credentials, as the API and the services name them. */
const SECRET_FIELDS = [
  'password',
  'current_password',
  'new_password',
  're_new_password',
  'passwordHash',
  'password_hash',
  'token',
  'auth_token',
  'invitation_token',
  'tokenHash',
  'token_hash',
  'key',
  'api_key',
  'apiKey',
  'secret',
  'signature',
];

const quote = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `["${name}"]`);

export const REDACT_PATHS = [
  ...SECRET_HEADERS.flatMap((header) =>
    ['req.headers', 'res.headers', 'request.headers', 'reply.headers', 'response.headers', 'headers'].map((at) => `${at}${quote(header)}`),
  ),
  ...SECRET_FIELDS.flatMap((field) =>
    ['body', 'req.body', 'request.body', 'input', 'payload', 'data'].map((at) => `${at}${quote(field)}`),
  ),
  // The few names that are never anything but a secret, at the top level of a log call too.
  'password',
  'passwordHash',
  'current_password',
  'new_password',
  'authorization',
];

// --- 2. errors ---------------------------------------------------------------------------------

/**
 * Drizzle's query errors carry the SQL and its parameters in `message`, `stack` and `params`:
 * a registration's password hash, a token's hash, a user's text. Parameters never reach a log;
 * the SQL text (which holds no values) stays for debugging.
 */
const SQL_PARAMS = /\nparams: [\s\S]*?(?=\n {4}at |\ncaused by: |$)/g;
/** Values PostgreSQL quotes in its messages: `invalid input syntax for type integer: "<value>"`. */
const QUOTED_VALUE = /: "(?:[^"]|"")*"/g;

function scrub(text: string): string {
  return scrubSecrets(text.replace(SQL_PARAMS, '\nparams: [redacted]'));
}


/**
 * What is kept of a database error: the message without quoted values, the code, the names of the
 * schema objects. Its `detail` (`Key (email)=(ada@example.com) already exists.`), `where`, `hint`,
 * `internalQuery` and the values quoted in its message can echo the statement's data.
 */
function serializeDatabaseError(error: Error): Record<string, unknown> {
  const fields = error as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {
    type: error.name || 'DatabaseError',
    message: scrub(String(error.message).replace(QUOTED_VALUE, ': "[redacted]"')),
    code: fields.code,
  };
  for (const name of ['severity', 'table', 'column', 'constraint', 'routine'] as const) {
    if (typeof fields[name] === 'string') out[name] = fields[name];
  }
  return out;
}

/** Properties of other errors that are never logged (request bodies, headers, parameters). */
const DROPPED_ERROR_FIELDS = ['params', 'parameters', 'headers', 'requestBodyValues', 'config', 'request', 'response', 'raw'];

/** pino's error serializer, with SQL parameters, database values and secrets removed from the error and its causes. */
export function serializeError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return error;
  if (isServerError(error)) return serializeDatabaseError(error);
  const out = stdSerializers.err(error) as unknown as Record<string, unknown>;
  if (typeof out.message === 'string') out.message = scrub(out.message);
  // pino appends the causes' stacks ("caused by: ..."), messages included; each cause is
  // serialized on its own below, by the rules for its kind.
  if (typeof out.stack === 'string') out.stack = scrub(out.stack.split('\ncaused by: ')[0]!);
  for (const field of DROPPED_ERROR_FIELDS) if (field in out) out[field] = '[redacted]';
  for (const field of SECRET_FIELDS) if (field in out) out[field] = '[redacted]';
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error && depth < 8) out.cause = serializeError(cause, depth + 1);
  else if (out.cause instanceof Error) delete out.cause;
  if (Array.isArray(out.errors)) out.errors = out.errors.slice(0, 10).map((inner) => serializeError(inner, depth + 1));
  return out;
}

// --- 3. requests -------------------------------------------------------------------------------

const MAX_URL_CHARS = 512;
const SECRET_QUERY = /^(sig|signature|token|key|api_key|secret|password|code|x-amz-signature|x-amz-credential|x-amz-security-token)$/i;

/** The URL as logged: credential-like query values replaced, at most MAX_URL_CHARS characters. */
export function loggedUrl(url: string): string {
  const at = url.indexOf('?');
  let out = url;
  if (at >= 0) {
    const query = url
      .slice(at + 1)
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=');
        const name = eq >= 0 ? pair.slice(0, eq) : pair;
        return eq >= 0 && SECRET_QUERY.test(decodeQueryName(name)) ? `${name}=[redacted]` : pair;
      })
      .join('&');
    out = `${url.slice(0, at)}?${query}`;
  }
  return out.length > MAX_URL_CHARS ? `${out.slice(0, MAX_URL_CHARS)}…[${out.length - MAX_URL_CHARS} more]` : out;
}

function decodeQueryName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * Fastify's own request fields (method, url, host, address), with the URL as `loggedUrl` makes
 * it. Never the headers, the query object or the body.
 */
function serializeRequest(request: unknown): unknown {
  if (!request || typeof request !== 'object') return request;
  const req = request as { method?: string; url?: string; host?: string; ip?: string; socket?: { remotePort?: number } };
  return {
    method: req.method,
    url: typeof req.url === 'string' ? loggedUrl(req.url) : undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

// --- 4. every line -----------------------------------------------------------------------------

/**
 * Things that are secrets by their form, wherever they appear: API keys, argon2 hashes, and a
 * credential after Bearer/Token. JSON-escaped text is matched as written in the line.
 */
const SECRET_PATTERNS = /wsai_[A-Za-z0-9_-]{8,}|\$argon2(?:id|i|d)\$[^"\s\\]*|\b(Bearer|Token)\s+[A-Za-z0-9._~+/=-]{16,}/g;

export function scrubSecrets(text: string): string {
  return text.replace(SECRET_PATTERNS, (_match, scheme: string | undefined) => (scheme ? `${scheme} [redacted]` : '[redacted]'));
}

/**
 * The process logger; Fastify uses it too, so every request line carries its request id.
 * Tests build theirs with this function as well, so they log exactly what production logs.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError, error: serializeError, req: serializeRequest },
      hooks: { streamWrite: scrubSecrets },
    },
    destination,
  );
}
