import { z } from 'zod';
import { pathId } from '../../platform/ids.js';
import { email, userOut } from '../users/index.js';
import { invitationStatuses } from './invitations.table.js';

export const invitationRoles = ['admin', 'member'] as const;
export type InvitationRole = (typeof invitationRoles)[number];
export type InvitationStatus = (typeof invitationStatuses)[number];

export const invitationOut = z.object({
  id: z.uuid(),
  workspace: z.uuid(),
  /** Null for a workspace invitation. */
  team: z.uuid().nullable(),
  email: z.string(),
  role: z.enum(invitationRoles),
  /** `expired` also for a pending invitation past `expires_at` that nothing has marked yet. */
  status: z.enum(invitationStatuses),
  expires_at: z.iso.datetime({ offset: true }),
  created_at: z.iso.datetime({ offset: true }),
  // The invitee is not a member yet and cannot read the workspace or team: the names travel here.
  workspace_name: z.string(),
  team_name: z.string().nullable(),
  invited_by: userOut.nullable(),
});
export type InvitationOut = z.output<typeof invitationOut>;

/** `role` is the workspace role (workspace invitation) or the team role (team invitation). */
export const createInvitationBody = z.object({ email, role: z.enum(invitationRoles).default('member') });
export type CreateInvitationInput = z.output<typeof createInvitationBody>;

export const invitationListQuery = z.object({ status: z.enum(invitationStatuses).optional() });
export const invitationIdParams = z.object({ id: pathId });
/** `accept/` and `decline/`: the token of the invitation mail, or no body (null to Fastify) for a verified invitee. */
export const answerInvitationBody = z.object({ token: z.string().min(1).max(128).optional() }).nullish();
/** `/api/workspaces/{id}/invitations/{invitationId}/` and the team equivalent. */
export const scopedInvitationParams = z.object({ id: pathId, invitationId: pathId });
