import { z } from 'zod';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a syntactically valid UUID (any version). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * Path ids are bounded strings, not validated as UUIDs at the edge: a malformed id must answer
 * like an unknown one (403 for a workspace, 404 for an object in it), never 400 or 500.
 * Services check `isUuid` before querying.
 */
export const pathId = z.string().min(1).max(100);
