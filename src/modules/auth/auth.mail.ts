import type { MailMessage } from '../../platform/mail/port.js';

/**
 * Mails that prove an address. Each carries a browser link under PUBLIC_BASE_URL and the same
 * uid and token spelled out for the API call, as the password-reset mail does.
 */

export function activationMail(input: {
  to: string;
  uid: number;
  token: string;
  expiresAt: Date;
  publicBaseUrl: string;
}): MailMessage {
  const link = `${input.publicBaseUrl}/activate/${input.uid}/${input.token}`;
  return {
    to: input.to,
    subject: 'Confirm your email address',
    text:
      `Please confirm that ${input.to} is your email address.\n\n` +
      `To confirm, open ${link}\n` +
      `or send uid=${input.uid} and token=${input.token} to POST /auth/users/activation/.\n\n` +
      `The link works once and expires at ${input.expiresAt.toISOString()}; ` +
      `POST /auth/users/resend_activation/ sends a new one. If you did not create an account, ignore this mail.\n`,
  };
}
