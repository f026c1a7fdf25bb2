import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, type FieldErrors, ServiceUnavailableError } from './errors.js';
import { describeDependencyFault } from './faults.js';

/** Body of every error response. */
export interface ErrorBody {
  detail: string;
  code: string;
  errors?: FieldErrors;
}

// Fastify's own errors that are the client's fault, mapped to our codes.
const FASTIFY_CLIENT_ERRORS: Record<string, { status: number; code: string; detail: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'parse_error', detail: 'Malformed JSON in request body.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'parse_error', detail: 'Request body is empty.' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', detail: 'Request body is too large.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    detail: 'Unsupported media type in request.',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'parse_error', detail: 'Invalid Content-Length.' },
  FST_REQ_FILE_TOO_LARGE: { status: 413, code: 'payload_too_large', detail: 'Uploaded file is too large.' },
  FST_FILES_LIMIT: { status: 400, code: 'too_many_files', detail: 'Too many files in the request.' },
  FST_PARTS_LIMIT: { status: 400, code: 'too_many_parts', detail: 'Too many parts in the multipart request.' },
  FST_INVALID_MULTIPART_CONTENT_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    detail: 'The request is not multipart.',
  },
};

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
    const known = error.code ? FASTIFY_CLIENT_ERRORS[error.code] : undefined;
    if (known) return sendError(reply, known.status, { detail: known.detail, code: known.code });
    if (error instanceof SyntaxError || error.statusCode === 400) {
      return sendError(reply, 400, { detail: 'Malformed request.', code: 'parse_error' });
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return sendError(reply, error.statusCode, { detail: 'Bad request.', code: 'bad_request' });
    }
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
