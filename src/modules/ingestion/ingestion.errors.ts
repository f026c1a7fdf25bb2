/** A failure whose `userMessage` can be shown to the end user as the task's error_message. */
export class IngestionError extends Error {
  constructor(
    readonly code: string,
    readonly userMessage: string,
    options?: { cause?: unknown; retryable?: boolean },
  ) {
    super(userMessage, options);
    this.name = 'IngestionError';
    this.retryable = options?.retryable ?? false;
  }

  readonly retryable: boolean;
}
