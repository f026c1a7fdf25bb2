/**
 * The one error hierarchy of the service. Services throw these; the error handler
 * (error-handler.ts) is the only place that turns them into HTTP responses:
 * `{ detail, code, errors? }` with the status carried by the error.
 */
export type FieldErrors = Record<string, string[]>;

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly errors?: FieldErrors,
    /** Extra response headers, such as Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
    this.name = new.target.name;
  }

  get detail(): string {
    return this.message;
  }
}

/** 400: the request is well-formed JSON but breaks a rule; `errors` names the fields. */
export class ValidationError extends AppError {
  constructor(detail: string, errors?: FieldErrors, code = 'validation_error') {
    super(400, code, detail, errors);
  }
}

/** Builds a ValidationError for a single field. */
export function fieldError(field: string, message: string, code = 'validation_error'): ValidationError {
  return new ValidationError(message, { [field]: [message] }, code);
}

/**
 * 403 for anonymous callers and bad credentials too: the spec's workspace-scoped endpoints
 * answer 403 whenever the caller is not an authenticated current member.
 */
export class NotAuthenticatedError extends AppError {
  constructor(detail = 'Authentication credentials were not provided.', code = 'not_authenticated') {
    super(403, code, detail);
  }
}

export class PermissionDeniedError extends AppError {
  constructor(detail = 'You do not have permission to perform this action.', code = 'permission_denied') {
    super(403, code, detail);
  }
}

export class NotFoundError extends AppError {
  constructor(detail = 'Not found.', code = 'not_found') {
    super(404, code, detail);
  }
}

export class ConflictError extends AppError {
  constructor(detail: string, code = 'conflict') {
    super(409, code, detail);
  }
}

/** 402: plan and credit refusals (`model_not_in_plan`, `credit_exhausted`, `document_limit`, ...). */
export class PaymentRequiredError extends AppError {
  constructor(detail: string, code: string) {
    super(402, code, detail);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(detail = 'Request body is too large.', code = 'payload_too_large') {
    super(413, code, detail);
  }
}

export class ThrottledError extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    const wait = Math.max(1, Math.ceil(retryAfterSeconds));
    super(429, 'throttled', `Request was throttled. Expected available in ${wait} seconds.`, undefined, {
      'Retry-After': String(wait),
    });
  }
}

/** Seconds a 503 asks the client to wait before retrying (`Retry-After`). */
export const RETRY_AFTER_SECONDS = 5;

export const SERVICE_UNAVAILABLE_DETAIL = 'Service temporarily unavailable, please retry.';

/** 503 with `Retry-After`: a dependency is down or a feature is not configured on this server. */
export class ServiceUnavailableError extends AppError {
  constructor(detail = SERVICE_UNAVAILABLE_DETAIL, code = 'service_unavailable', retryAfterSeconds = RETRY_AFTER_SECONDS) {
    super(503, code, detail, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

/** 507: the service's own file store is full (local storage); nothing was stored. */
export class StorageFullError extends AppError {
  constructor(detail = 'The file store is full; nothing was stored. Please try again later or contact the operator.') {
    super(507, 'storage_full', detail);
  }
}
