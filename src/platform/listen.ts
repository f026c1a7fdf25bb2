/**
 * Connections the kernel completes and queues for the service while its event loop is busy.
 * Node's default, 511, drops the SYNs of a burst past it, and each dropped client retries only
 * after a second: 167 of 1,000 streams opened at once lost that second (bench:stream, a fresh
 * process). Linux caps it at net.core.somaxconn (4096 since kernel 5.4).
 */
export const LISTEN_BACKLOG = 4096;

/** Node's own limit for a request's headers to arrive (60 s); lowered to the request limit when that is shorter. */
const HEADERS_TIMEOUT_MS = 60_000;
/** Node checks its connections for those limits every 30 s by default: a limit is enforced up to that late. */
const LONGEST_CHECK_INTERVAL_MS = 30_000;

/**
 * The HTTP server's limits on how long a request may take to arrive (REQUEST_TIMEOUT_SECONDS),
 * as Fastify options. Fastify's default is no limit, which it advises against without a proxy
 * in front: a client that sends its body a byte at a time holds its connection for ever. Node
 * answers an expired request through `clientError` (error-handler.ts: 408 in our shape) and
 * closes the connection; the time to answer, such as a stream's, does not count. The
 * connections are checked a quarter of the request limit apart (at most 30 s), so it is enforced
 * within 1.25× of it (the headers limit, 60 s at the default, within 90 s). With no request limit
 * (0), Node's headers limit (60 s) still applies.
 */
export function requestTimeouts(requestTimeoutSeconds: number) {
  if (requestTimeoutSeconds <= 0) return { requestTimeout: 0 };
  const requestTimeout = Math.max(1, Math.round(requestTimeoutSeconds * 1000));
  return {
    requestTimeout,
    http: {
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeout),
      connectionsCheckingInterval: Math.min(LONGEST_CHECK_INTERVAL_MS, Math.max(100, Math.round(requestTimeout / 4))),
    },
  };
}
