import { AppError } from '../errors.js';

/** Why a URL was refused; for logs and tests (the HTTP body carries only `detail` and `code`). */
export type UrlRefusalReason =
  | 'invalid_url'
  | 'too_long'
  | 'scheme'
  | 'userinfo'
  | 'port'
  | 'host_name'
  | 'address';

/**
 * 400 `url_not_allowed`: the URL, a redirect it leads to, or an address its host resolves to is
 * outside what the service may fetch. The detail names the rule, never a resolved address.
 */
export class UrlNotAllowedError extends AppError {
  constructor(
    detail: string,
    readonly reason: UrlRefusalReason,
  ) {
    super(400, 'url_not_allowed', detail);
  }
}

export type UrlFetchErrorCode = 'url_fetch_failed' | 'url_too_large' | 'url_timeout' | 'url_too_many_redirects';

/**
 * 422: the URL was allowed but fetching it failed (network, DNS, size, time, redirect loop).
 * The detail is user-facing (ingestion copies it into the task's `error_message`); the
 * underlying error stays in `cause` for the server log.
 */
export class UrlFetchError extends AppError {
  constructor(code: UrlFetchErrorCode, detail: string, cause?: unknown) {
    super(422, code, detail);
    if (cause !== undefined) this.cause = cause;
  }
}
