import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, type FieldErrors, ServiceUnavailableError, StorageFullError } from './errors.js';
import { describeDependencyFault, findDiskFull } from './faults.js';
import { multipartClientError } from './multipart.js';
import { fieldErrorsOf } from './zod-issues.js';

/** Body of every error response. */
export interface ErrorBody {
  detail: string;
  code: string;
  errors?: FieldErrors;
}

type KnownError = { status: number; code: string; detail: string };

const DATABASE_FULL_DETAIL = "The service's storage is full; nothing was stored. Please try again later or contact the operator.";

/*
 * Fastify's own errors that are the client's fault, mapped to our codes. Their messages are never
 * sent: several echo the input (FST_ERR_MAX_PARAM_LENGTH and FST_ERR_BAD_URL quote the path).
 */
const FASTIFY_CLIENT_ERRORS: Record<string, KnownError> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'parse_error', detail: 'Malformed JSON in request body.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'parse_error', detail: 'Request body is empty.' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', detail: 'Request body is too large.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    detail: 'Unsupported media type in request.',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'parse_error', detail: 'Invalid Content-Length.' },
  FST_ERR_BAD_URL: { status: 400, code: 'bad_url', detail: 'The URL is not valid (malformed percent-encoding).' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: 'uri_too_long', detail: 'A path segment of the URL is too long.' },
  FST_ERR_NOT_FOUND: { status: 404, code: 'not_found', detail: 'Not found.' },
  FST_ERR_VALIDATION: { status: 400, code: 'validation_error', detail: 'Invalid input.' },
};

/** `{detail, code}` from a status alone ("Payload Too Large." / `payload_too_large`): true, and never the input. */
export function statusError(status: number): KnownError {
  const name = STATUS_CODES[status] ?? 'Bad Request';
  return { status, code: name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, ''), detail: `${name}.` };
}

/** The answer to a client error Fastify or a plugin raised (never its message). */
function frameworkClientError(error: FastifyError): KnownError | undefined {
  const known = error.code ? FASTIFY_CLIENT_ERRORS[error.code] : undefined;
  if (known) return known;
  if (error instanceof SyntaxError || error.statusCode === 400) {
    return { status: 400, code: 'parse_error', detail: 'Malformed request.' };
  }
  if (error.statusCode && error.statusCode > 400 && error.statusCode < 500) return statusError(error.statusCode);
  return undefined;
}

/** Turns a zod-provider validation failure into `{field: [messages]}` (dotted paths; body fields unprefixed). */
function fieldErrors(error: FastifyError): FieldErrors {
  const issues = (error.validation ?? []).map((issue) => {
    const path = (issue.params as { issue?: { path?: PropertyKey[] } } | undefined)?.issue?.path;
    return {
      path: Array.isArray(path) && path.length ? path : issue.instancePath.split('/').filter(Boolean),
      message: issue.message ?? 'Invalid value.',
    };
  });
  return fieldErrorsOf(issues);
}

export function sendError(reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) {
      if (error.headers) reply.headers(error.headers);
      const body: ErrorBody = { detail: error.detail, code: error.code };
      if (error.errors) body.errors = error.errors;
      return sendError(reply, error.status, body);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const errors = fieldErrors(error);
      const where = error.validationContext ? ` in ${error.validationContext}` : '';
      return sendError(reply, 400, { detail: `Invalid input${where}.`, code: 'validation_error', errors });
    }
    if (isResponseSerializationError(error)) {
      request.log.error({ err: error, issues: error.cause.issues }, 'response does not match its schema');
      return sendError(reply, 500, { detail: 'Internal server error.', code: 'server_error' });
    }
    // Multipart parser failures, wherever they surface (the part iterator, a file stream read by
    // a storage upload): malformed bodies and limits are the client's, with a truthful detail.
    const multipart = multipartClientError(error);
    if (multipart) return sendError(reply, multipart.status, { detail: multipart.detail, code: multipart.code });
    const known = frameworkClientError(error);
    if (known) return sendError(reply, known.status, { detail: known.detail, code: known.code });
    // PostgreSQL or Redis cannot be reached: the client should retry, nothing is broken. Only the
    // driver's code and message are logged; Drizzle's wrapper holds the SQL and its parameters.
    const fault = describeDependencyFault(error);
    if (fault) {
      request.log.warn({ fault }, 'dependency unavailable');
      const unavailable = new ServiceUnavailableError();
      reply.headers(unavailable.headers!);
      return sendError(reply, unavailable.status, { detail: unavailable.detail, code: unavailable.code });
    }
    // The database's disk is full: 507 as for the file store, nothing was stored. After the
    // unavailable case, whose error may carry a disk-full cause (the embedded database stopped).
    const diskFull = findDiskFull(error);
    if (diskFull) {
      request.log.error({ fault: { code: '53100', message: diskFull.message.slice(0, 200) } }, 'database disk full');
      const full = new StorageFullError(DATABASE_FULL_DETAIL);
      return sendError(reply, full.status, { detail: full.detail, code: full.code });
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, 500, { detail: 'Internal server error.', code: 'server_error' });
  });

  app.setNotFoundHandler((_request, reply) => sendError(reply, 404, { detail: 'Not found.', code: 'not_found' }));

  // In place of Fastify's return503OnClosing (its body is in Fastify's shape; app.ts turns it
  // off): once the app is closing, a request that still arrives (a keep-alive connection, a
  // pipelined request) gets 503 in ours and the connection is closed.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    const unavailable = new ServiceUnavailableError();
    reply.headers(unavailable.headers!).header('connection', 'close');
    void sendError(reply, unavailable.status, { detail: unavailable.detail, code: unavailable.code });
  });
}

/**
 * Fastify's `frameworkErrors` option: errors its router raises before any route or hook runs
 * (a path segment over `maxParamLength`: 414; malformed percent-encoding: 400). Without it they
 * answer in Fastify's own shape, quoting the whole path.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const known = frameworkClientError(error) ?? { status: 500, code: 'server_error', detail: 'Internal server error.' };
  if (known.status >= 500) reply.log.error({ code: error.code }, 'router failure');
  // This reply is made outside any route context, so the app's onSend hooks do not run for it.
  reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
  void sendError(reply, known.status, { detail: known.detail, code: known.code });
}

/** Node's parser errors before a request exists, mapped to a status and our body. */
function clientErrorAnswer(error: NodeJS.ErrnoException): KnownError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'request_header_fields_too_large', detail: 'The request headers are too large.' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, code: 'request_timeout', detail: 'The request took too long to arrive.' };
    default:
      return { status: 400, code: 'bad_request', detail: 'Malformed HTTP request.' };
  }
}

/**
 * Fastify's `clientErrorHandler` option (the server's 'clientError' event): Node's HTTP parser
 * refused the bytes (headers over the size limit: 431; malformed request line or header: 400;
 * a request too slow to arrive: 408), so no route, hook or error handler runs. Answers in our
 * shape and closes the connection. Only the parser's code is logged: the error carries the raw
 * bytes it refused, headers (Authorization, cookies) included.
 */
export function clientErrorHandler(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, code, detail } = clientErrorAnswer(error);
  this.log.debug({ code: error.code }, 'client error before a request');
  // Never write into a response that has started (keep-alive socket mid-response).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ detail, code });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${randomUUID()}\r\n` +
      'X-Content-Type-Options: nosniff\r\n' +
      'Connection: close\r\n\r\n' +
      body,
    () => socket.destroy(),
  );
}
