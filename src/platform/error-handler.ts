import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, type FieldErrors, ServiceUnavailableError } from './errors.js';
import { describeDependencyFault } from './faults.js';
import { multipartClientError } from './multipart.js';

/** Body of every error response. */
export interface ErrorBody {
  detail: string;
  code: string;
  errors?: FieldErrors;
}

type KnownError = { status: number; code: string; detail: string };

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
  const errors: FieldErrors = {};
  for (const issue of error.validation ?? []) {
    const params = issue.params as { issue?: { path?: PropertyKey[] } } | undefined;
    const path = params?.issue?.path;
    const field =
      Array.isArray(path) && path.length
        ? path.map(String).join('.')
        : issue.instancePath.replace(/^\//, '').replaceAll('/', '.') || 'non_field_errors';
    (errors[field] ??= []).push(issue.message ?? 'Invalid value.');
  }
  return errors;
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
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, 500, { detail: 'Internal server error.', code: 'server_error' });
  });

  app.setNotFoundHandler((_request, reply) => sendError(reply, 404, { detail: 'Not found.', code: 'not_found' }));
}

