import { z } from 'zod';
import { pathId } from '../../platform/ids.js';

export const createApiKeyBody = z.object({
  name: z.string().trim().min(1).max(100),
  /** When the key stops working (ISO 8601 with an offset); omitted: never. */
  expires_at: z.iso.datetime({ offset: true }).optional(),
  /** Limit the key to this workspace (one the caller is a member of). */
  workspace: z.uuid().optional(),
  /** Only GET, HEAD and OPTIONS requests. */
  read_only: z.boolean().default(false),
});
export type CreateApiKeyInput = z.output<typeof createApiKeyBody>;

export const apiKeyOut = z.object({
  id: z.uuid(),
  name: z.string(),
  /** The key's first characters, to recognise it; never enough to use it. */
  prefix: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  expires_at: z.string().nullable(),
  workspace: z.uuid().nullable(),
  read_only: z.boolean(),
});
export type ApiKeyOut = z.output<typeof apiKeyOut>;

/** The create answer: the only time the full key is shown. */
export const createdApiKeyOut = apiKeyOut.extend({ key: z.string() });
export type CreatedApiKeyOut = z.output<typeof createdApiKeyOut>;

export const apiKeyParams = z.object({ id: pathId });
