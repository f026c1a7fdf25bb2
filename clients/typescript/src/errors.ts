/** Every non-2xx answer of the API, as thrown by the SDK: the service's `{detail, code}` body. */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    /** The HTTP status (400, 403, 404, 409, 429, ...). */
    readonly status: number,
    /** The stable, machine-readable reason (`not_found`, `throttled`, `credit_exhausted`, ...). */
    readonly code: string,
    /** What went wrong, for people. */
    readonly detail: string,
    /** Seconds to wait before retrying, from `Retry-After` (429, and 409/503 when the service says). */
    readonly retryAfter: number | undefined,
    /** For validation errors: the messages of each field. */
    readonly errors: Record<string, string[]> | undefined,
  ) {
    super(`${status} ${code}: ${detail}`);
  }

  /** Builds the error from an answer whose body was already read (`body` undefined when it was not JSON). */
  static fromResponse(response: Response, body: unknown): ApiError {
    const fields = (body && typeof body === 'object' ? body : {}) as { detail?: unknown; code?: unknown; errors?: unknown };
    return new ApiError(
      response.status,
      typeof fields.code === 'string' ? fields.code : `http_${response.status}`,
      typeof fields.detail === 'string' ? fields.detail : response.statusText || `HTTP ${response.status}`,
      parseRetryAfter(response.headers.get('retry-after')),
      fields.errors && typeof fields.errors === 'object' ? (fields.errors as Record<string, string[]>) : undefined,
    );
  }

  /** Reads the body of a failed answer and builds the error. */
  static async read(response: Response): Promise<ApiError> {
    const text = await response.text().catch(() => '');
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return ApiError.fromResponse(response, body);
  }
}

/** `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 section 10.2.3). */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
