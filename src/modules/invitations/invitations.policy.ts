import type { InvitationStatus } from './invitations.schemas.js';

/** The status a client sees: a pending invitation past its expiry is `expired` even before it is marked. */
export function effectiveStatus(invitation: { status: InvitationStatus; expiresAt: Date }, now = new Date()) {
  return invitation.status === 'pending' && invitation.expiresAt.getTime() <= now.getTime()
    ? 'expired'
    : invitation.status;
}

/** An invitation belongs to whoever holds its email address (compared case-insensitively). */
export const isInvitee = (invitation: { email: string }, caller: { email: string }): boolean =>
  invitation.email === caller.email.trim().toLowerCase();
