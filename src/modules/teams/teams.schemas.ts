import { z } from 'zod';
import { pathId } from '../../platform/ids.js';
import { userOut } from '../users/index.js';

export const teamRoles = ['admin', 'member'] as const;
export type TeamRole = (typeof teamRoles)[number];

const teamName = z.string().trim().min(1).max(100);
const teamDescription = z.string().trim().max(2000);

export const teamIdParams = z.object({ id: pathId });
export const teamOut = z.object({
  id: z.uuid(),
  workspace: z.uuid(),
  name: z.string(),
  description: z.string(),
  created_at: z.iso.datetime({ offset: true }),
});
export type TeamOut = z.output<typeof teamOut>;

export const teamListQuery = z.object({ workspace: z.uuid().optional() });
export const createTeamBody = z.object({
  workspace: z.uuid(),
  name: teamName,
  description: teamDescription.default(''),
});
/** PUT replaces the name; a description that is left out stays as it is. */
export const replaceTeamBody = z.object({ name: teamName, description: teamDescription.optional() });
export const updateTeamBody = z.object({ name: teamName.optional(), description: teamDescription.optional() });
export type TeamChanges = z.output<typeof updateTeamBody>;

export const teamMembershipOut = z.object({
  id: z.uuid(),
  team: z.uuid(),
  user: userOut,
  role: z.enum(teamRoles),
  created_at: z.iso.datetime({ offset: true }),
});
export type TeamMembershipOut = z.output<typeof teamMembershipOut>;

export const teamMembershipListQuery = z.object({ team: z.uuid().optional(), workspace: z.uuid().optional() });
export const teamMembershipIdParams = z.object({ id: pathId });
export const changeTeamRoleBody = z.object({ role: z.enum(teamRoles) });
