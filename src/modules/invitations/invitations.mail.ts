import type { MailMessage } from '../../platform/mail/port.js';

export interface InvitationMailInput {
  invitationId: string;
  email: string;
  role: string;
  workspaceName: string;
  teamName: string | null;
  inviter: { name: string; email: string };
  expiresAt: Date;
  publicBaseUrl: string;
}

/** The invitation mail: who invites, to what, the accept link and the equivalent API calls. */
export function invitationMail(input: InvitationMailInput): MailMessage {
  const inviter = input.inviter.name.trim() || input.inviter.email;
  const target = input.teamName
    ? `the team "${input.teamName}" in the workspace "${input.workspaceName}"`
    : `the workspace "${input.workspaceName}"`;
  const link = `${input.publicBaseUrl}/invitations/${input.invitationId}/accept`;
  const api = `/api/invitations/${input.invitationId}`;
  return {
    to: input.email,
    subject: input.teamName
      ? `${inviter} invited you to the team ${input.teamName} in ${input.workspaceName}`
      : `${inviter} invited you to join ${input.workspaceName}`,
    text:
      `${inviter} (${input.inviter.email}) invited you to ${target} as ${input.role}.\n\n` +
      `To accept, open ${link}\n` +
      `or, signed in with this email address, call POST ${api}/accept/ (POST ${api}/decline/ to decline).\n` +
      `If you have no account yet, sign up with ${input.email} first.\n\n` +
      `The invitation can be used once and expires at ${input.expiresAt.toISOString()}.\n`,
  };
}
