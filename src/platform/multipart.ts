import type { Readable } from 'node:stream';
// The only import of the plugin (eslint forbids it elsewhere): every multipart body is read
// through `formParts`, which applies the input gate and turns parser failures into 4xx.
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, type FieldErrors, PayloadTooLargeError, ValidationError } from './errors.js';
import { findTextProblems, NUL_MESSAGE, SURROGATE_MESSAGE, textProblem, textProblemError } from './input-gate.js';

/** Busboy's limits, fixed per plugin registration (each module its own). */
export interface MultipartLimits {
  /** Most file parts. */
  files: number;
  /** Bytes per file; the parser cuts a larger file and marks it truncated (then 413). */
  fileSize: number;
  /** Most non-file fields. */
  fields: number;
  /** Bytes per field value; a longer value is refused (400), never silently cut. */
  fieldSize: number;
  /** Most parts of either kind. */
  parts?: number;
}

/** One part of a multipart body as plain values, already checked by the input gate. */
export type FormPart =
  | { type: 'field'; name: string; value: string }
  | {
      type: 'file';
      field: string;
      filename: string;
      mimetype: string;
      stream: Readable;
      /** True once the parser cut the file at `fileSize` (it had more). */
      truncated: () => boolean;
    };

/** Registers multipart parsing in `app`'s context (the routes of one module) with its limits. */
export async function registerMultipart(app: FastifyInstance, limits: MultipartLimits): Promise<void> {
  await app.register(multipart, { limits });
}

const malformed = (detail: string) => new AppError(400, 'parse_error', detail);

/**
 * The 4xx a multipart parser failure stands for, or undefined when `error` is something else.
 * Busboy's failures are plain Errors known only by their message; the plugin's carry codes.
 * Used here and by the error handler, since a file stream's failure surfaces wherever the
 * stream is being read (storage upload, audio buffer).
 */
export function multipartClientError(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    const found = classify(current);
    if (found) return found;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function classify(error: Error): AppError | undefined {
  if (error instanceof AppError) return undefined;
  switch ((error as { code?: unknown }).code) {
    case 'FST_PARTS_LIMIT':
      return new AppError(400, 'too_many_parts', 'Too many parts in the multipart request.');
    case 'FST_FILES_LIMIT':
      return new AppError(400, 'too_many_files', 'Too many files in the request.');
    case 'FST_FIELDS_LIMIT':
      return new AppError(400, 'too_many_fields', 'Too many fields in the multipart request.');
    case 'FST_REQ_FILE_TOO_LARGE':
      return new PayloadTooLargeError('Uploaded file is too large.');
    case 'FST_PROTO_VIOLATION':
      return new ValidationError('A multipart field name is not allowed.', { non_field_errors: ['This field name is not allowed.'] });
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return malformed('A multipart field declared as JSON is not valid JSON.');
    case 'FST_MP_PREMATURE_CLOSE':
      return malformed('The request ended before the multipart body was complete.');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError(415, 'unsupported_media_type', 'The request is not multipart/form-data.');
    default:
      break;
  }
  const message = typeof error.message === 'string' ? error.message : '';
  if (message === 'Unexpected end of multipart data' || message.endsWith('terminated early due to unexpected end of multipart data')) {
    return malformed('Malformed multipart body: it ends before its closing boundary.');
  }
  if (message === 'Multipart: Boundary not found' || message === 'Boundary required') {
    return malformed('Malformed multipart body: the Content-Type header has no boundary.');
  }
  if (message === 'Unsupported Content-Type.' || message === 'Missing Content-Type-header.') {
    return new AppError(415, 'unsupported_media_type', 'The request is not multipart/form-data.');
  }
  return undefined;
}

const SAFE_FIELD = /^[\w.\-[\]]{1,64}$/;
/** A part's field name as it may appear in an error (odd or long names are not echoed). */
const shownField = (name: string) => (SAFE_FIELD.test(name) ? name : 'non_field_errors');

/** The gate's findings for one part: its field name, its value or its file name and type. */
function partProblems(part: { fieldname: string } & ({ type: 'field'; value: unknown } | { type: 'file'; filename: string; mimetype: string })): FieldErrors | undefined {
  if (textProblem(part.fieldname)) {
    return { non_field_errors: ['Field names must not contain null characters or unpaired surrogates.'] };
  }
  const field = shownField(part.fieldname);
  if (part.type === 'field') {
    const errors = findTextProblems(part.value);
    const messages = Object.values(errors).flat();
    return messages.length ? { [field]: [...new Set(messages)] } : undefined;
  }
  const problem = textProblem(part.filename) ?? textProblem(part.mimetype);
  if (!problem) return undefined;
  const what = textProblem(part.filename) ? 'file name' : 'content type';
  return { [field]: [problem === NUL_MESSAGE ? `Null characters are not allowed in the ${what}.` : `${SURROGATE_MESSAGE.slice(0, -1)} in the ${what}.`] };
}

/**
 * After a refusal part-way through the body, the rest is read and dropped (never buffered) so
 * the reply goes out at once and the connection stays usable.
 */
function discardUnread(request: FastifyRequest): void {
  const raw = request.raw;
  if (raw.readableEnded) return;
  raw.unpipe();
  raw.resume();
}

/**
 * The parts of a multipart request, in order, as plain values. Each part passes the input gate
 * before it is handed over (400 `validation_error` naming the field); a malformed body, a limit
 * or a truncated field is a 4xx AppError thrown from the iteration, so the consumer never sees a
 * parser's own error. Consumers read the whole body before they act on it (save, call a model,
 * open a stream): a failure can surface at any part, up to the closing boundary.
 */
export async function* formParts(request: FastifyRequest): AsyncGenerator<FormPart, void, undefined> {
  let finished = false;
  try {
    // request.parts itself can throw (no boundary) before the first part.
    const parts = request.parts();
    while (true) {
      let next: IteratorResult<Awaited<ReturnType<typeof parts.next>>['value']>;
      try {
        next = await parts.next();
      } catch (error) {
        throw multipartClientError(error) ?? error;
      }
      if (next.done) break;
      const part = next.value;
      if (part.type === 'file') {
        const problems = partProblems(part);
        if (problems) {
          part.file.resume();
          throw textProblemError('body', problems);
        }
        const file = part.file;
        yield { type: 'file', field: part.fieldname, filename: part.filename, mimetype: part.mimetype, stream: file, truncated: () => file.truncated };
      } else {
        const problems = partProblems(part);
        if (problems) throw textProblemError('body', problems);
        if (part.valueTruncated) {
          const message = 'This field is longer than the multipart request allows.';
          throw new ValidationError('Invalid input in body.', { [shownField(part.fieldname)]: [message] });
        }
        yield { type: 'field', name: part.fieldname, value: String(part.value) };
      }
    }
    finished = true;
  } catch (error) {
    throw multipartClientError(error) ?? error;
  } finally {
    if (!finished) discardUnread(request);
  }
}
