import { AppError, ConflictError, ValidationError } from '../errors.js';

/** 409 `idempotency_request_in_progress` with `Retry-After`: the first request with this key is still running. */
export class IdempotencyInProgressError extends AppError {
  constructor(retryAfterSeconds = 1) {
    super(
      409,
      'idempotency_request_in_progress',
      'A request with this Idempotency-Key is still being processed; retry shortly.',
      undefined,
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

export const idempotencyErrors = {
  invalidKey: () =>
    new ValidationError('Invalid Idempotency-Key header.', {
      'Idempotency-Key': ['Must be 1 to 255 printable ASCII characters.'],
    }),
  keyReused: () =>
    new ConflictError('This Idempotency-Key was already used with a different request.', 'idempotency_key_reused'),
  inProgress: () => new IdempotencyInProgressError(),
};
