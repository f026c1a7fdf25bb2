import { z } from 'zod';
import { pathId } from '../../platform/ids.js';
import { userOut } from '../users/index.js';

export const workspaceRoles = ['admin', 'member'] as const;
export type WorkspaceRole = (typeof workspaceRoles)[number];
export const workspaceStatuses = ['active', 'archived'] as const;

const workspaceName = z.string().trim().min(1).max(100);

export const workspaceIdParams = z.object({ id: pathId });
export const workspaceOut = z.object({
  id: z.uuid(),
  name: z.string(),
  slug: z.string(),
  owner: z.number().int(),
  status: z.enum(workspaceStatuses),
  created_at: z.iso.datetime({ offset: true }),
  updated_at: z.iso.datetime({ offset: true }),
});
export type WorkspaceOut = z.output<typeof workspaceOut>;

export const createWorkspaceBody = z.object({ name: workspaceName });
export const updateWorkspaceBody = z.object({
  name: workspaceName.optional(),
  status: z.enum(workspaceStatuses).optional(),
});
export const replaceWorkspaceBody = z.object({ name: workspaceName, status: z.enum(workspaceStatuses).optional() });
export const transferOwnershipBody = z.object({ user: z.coerce.number().int().positive() });

export const membershipOut = z.object({
  id: z.uuid(),
  workspace: z.uuid(),
  user: userOut,
  role: z.enum(workspaceRoles),
  created_at: z.iso.datetime({ offset: true }),
});
export type MembershipOut = z.output<typeof membershipOut>;

export const membershipListQuery = z.object({ workspace: z.uuid().optional() });
export const membershipIdParams = z.object({ id: pathId });
export const changeRoleBody = z.object({ role: z.enum(workspaceRoles) });
