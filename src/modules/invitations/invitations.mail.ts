import type { MailMessage } from '../../platform/mail/port.js';

export interface InvitationMailInput {
  invitationId: string;
  /** The secret that proves the mailbox: only this mail carries it. */
  token: string;
  email: string;
  role: string;
  workspaceName: string;
  teamName: string | null;
  inviter: { name: string; email: string };
  expiresAt: Date;
  publicBaseUrl: string;
}

/**
 * The invitation mail: who invites, to what, the accept link and the equivalent API calls. The
 * link's token proves that whoever uses it reads mail at this address.
 */
export function invitationMail(input: InvitationMailInput): MailMessage {
  const inviter = input.inviter.name.trim() || input.inviter.email;
  const target = input.teamName
    ? `the team "${input.teamName}" in the workspace "${input.workspaceName}"`
    : `the workspace "${input.workspaceName}"`;
  const link = `${input.publicBaseUrl}/invitations/${input.invitationId}/accept?token=${input.token}`;
  const body = `{"token": "${input.token}"}`;
  const api = `/api/invitations/${input.invitationId}`;
  return {
    to: input.email,
    subject: input.teamName
      ? `${inviter} invited you to the team ${input.teamName} in ${input.workspaceName}`
      : `${inviter} invited you to join ${input.workspaceName}`,
    text:
      `${inviter} (${input.inviter.email}) invited you to ${target} as ${input.role}.\n\n` +
      `To accept, open ${link}\n` +
      `or, signed in as ${input.email}, call POST ${api}/accept/ with ${body} ` +
      `(POST ${api}/decline/ with the same body declines).\n` +
      `If you have no account yet, sign up (POST /auth/users/) with ${input.email} and ` +
      `"invitation_token": "${input.token}"; your address is then already confirmed.\n\n` +
      `The invitation can be used once and expires at ${input.expiresAt.toISOString()}.\n`,
  };
}
