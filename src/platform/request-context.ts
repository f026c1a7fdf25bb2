import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work belongs to, without passing it through every call: set for each
 * HTTP request (app.ts) and for each job run (with the id of the request that queued it), read
 * where work is handed on, such as when a job is recorded.
 */
export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The id of the request being served (or whose job is running), if any. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
