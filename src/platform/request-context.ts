import { AsyncLocalStorage } from 'node:async_hooks';
import type { SharedCache } from './cache/shared-cache.js';

/**
 * The request a piece of work belongs to, without passing it through every call: set for each
 * HTTP request (app.ts) and for each job run (with the id of the request that queued it), read
 * where work is handed on, such as when a job is recorded.
 */
export interface RequestContext {
  requestId: string;
  /**
   * The process's cache of memberships (and credentials) for request paths, set by app.ts for
   * each HTTP request; `requireMember` reads through it. Absent for job runs and the admin CLI,
   * which read the database.
   */
  accessCache?: SharedCache;
  /**
   * Set by authentication when the request's credential (an API key) may reach one workspace
   * only; read by the workspace guard and the "your workspaces" lists. Never set for job runs:
   * a job was authorised when the request that queued it was.
   */
  onlyWorkspaceId?: string;
  /**
   * The most restrictive throttle counted for this request (lowest remaining allowance), set by
   * `throttle()`; the response reports it in the RateLimit-* headers.
   */
  throttle?: ThrottleState;
}

export interface ThrottleState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The context of the request being served (or whose job is running), if any. */
export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

/** The id of the request being served (or whose job is running), if any. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/**
 * Limits the rest of the current request to one workspace. Throws outside a request context,
 * so a restriction can never be silently dropped.
 */
export function restrictRequestToWorkspace(workspaceId: string): void {
  const store = storage.getStore();
  if (!store) throw new Error('restrictRequestToWorkspace called outside a request context');
  store.onlyWorkspaceId = workspaceId.toLowerCase();
}

/** The one workspace the current request may reach, or undefined when it is not restricted. */
export function requestWorkspaceRestriction(): string | undefined {
  return storage.getStore()?.onlyWorkspaceId;
}

/**
 * Remembers a throttle counted for the current request, keeping the most restrictive one when
 * several apply (lowest remaining; on a tie, the later reset). Outside a request: nothing.
 */
export function recordThrottle(state: ThrottleState): void {
  const store = storage.getStore();
  if (!store) return;
  const { limit, remaining, resetSeconds } = state;
  const current = store.throttle;
  if (!current || remaining < current.remaining || (remaining === current.remaining && resetSeconds > current.resetSeconds)) {
    store.throttle = { limit, remaining, resetSeconds };
  }
}
