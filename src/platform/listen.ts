/**
 * Connections the kernel completes and queues for the service while its event loop is busy.
 * Node's default, 511, drops the SYNs of a burst past it, and each dropped client retries only
 * after a second: 167 of 1,000 streams opened at once lost that second (bench:stream, a fresh
 * process). Linux caps it at net.core.somaxconn (4096 since kernel 5.4).
 */
export const LISTEN_BACKLOG = 4096;
