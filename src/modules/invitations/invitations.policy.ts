import { safeEqual } from '../../platform/secrets.js';
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

/**
 * Whether the caller may answer (accept or decline) an invitation, and by which proof that they
 * read mail at its address:
 * - `token`: they present the invitation's mailed secret and their account has its address;
 * - `verified_email`: no token, and their account's address is the invitation's and verified.
 * Refusals: `not_found` (a token that is not this invitation's, or no token and another address:
 * the invitation does not exist for them), `email_mismatch` (the right token, another account's
 * address), `email_not_verified` (no token and the address is not proven).
 * Invitations made before tokens existed (`tokenHash` null) only take `verified_email`.
 */
export type AnswerDecision = 'token' | 'verified_email' | 'not_found' | 'email_mismatch' | 'email_not_verified';

export function answerDecision(
  invitation: { email: string; tokenHash: string | null },
  caller: { email: string; emailVerifiedAt: Date | null },
  presentedTokenHash: string | undefined,
): AnswerDecision {
  const sameAddress = isInvitee(invitation, caller);
  if (presentedTokenHash !== undefined) {
    if (invitation.tokenHash === null || !safeEqual(presentedTokenHash, invitation.tokenHash)) return 'not_found';
    return sameAddress ? 'token' : 'email_mismatch';
  }
  if (!sameAddress) return 'not_found';
  return caller.emailVerifiedAt === null ? 'email_not_verified' : 'verified_email';
}
