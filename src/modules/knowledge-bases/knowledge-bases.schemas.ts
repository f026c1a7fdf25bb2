import { z } from 'zod';
import { pathId } from '../../platform/ids.js';

const timestamp = z.iso.datetime({ offset: true });

export const kbParams = z.object({ ws: pathId, id: pathId });
export const chatKbParams = z.object({ ws: pathId, session: pathId });

export const kbOut = z.object({
  id: z.uuid(),
  workspace: z.uuid(),
  name: z.string(),
  description: z.string(),
  is_shared_with_workspace: z.boolean(),
  created_by: z.number().int().nullable(),
  document_count: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type KbOut = z.output<typeof kbOut>;

export const createKbBody = z.object({
  name: z.string().trim().min(1).max(200),
  description: z.string().max(5000).default(''),
  is_shared_with_workspace: z.boolean().default(false),
});
export const updateKbBody = z.object({
  name: z.string().trim().min(1).max(200).optional(),
  description: z.string().max(5000).optional(),
  is_shared_with_workspace: z.boolean().optional(),
});

const idList = z.array(z.uuid()).min(1).max(500);
export const documentIdsBody = z.object({ document_ids: idList });
export const kbIdsBody = z.object({ knowledge_base_ids: idList });

export const teamAccessOut = z.object({
  id: z.uuid(),
  team: z.uuid(),
  team_name: z.string(),
  permission: z.enum(['read', 'write']),
  created_at: timestamp,
});
export const grantTeamAccessBody = z.object({ team: z.uuid(), permission: z.enum(['read', 'write']) });
export const revokeTeamAccessBody = z.object({ team: z.uuid() });
