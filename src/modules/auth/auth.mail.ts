import type { MailMessage } from '../../platform/mail/port.js';

/**
 * Mails that prove an address. Each carries a browser link under PUBLIC_BASE_URL and the same
 * uid and token spelled out for the API call, as the password-reset mail does.
 */

/** A single-use token for one address, and where the browser link points. */
interface AddressTokenMail {
  to: string;
  uid: number;
  token: string;
  expiresAt: Date;
  publicBaseUrl: string;
}

export function activationMail(input: AddressTokenMail): MailMessage {
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

/** To the new address: the link that makes the change (the old address stands until then). */
export function emailChangeConfirmMail(input: AddressTokenMail): MailMessage {
  const link = `${input.publicBaseUrl}/email/confirm/${input.uid}/${input.token}`;
  return {
    to: input.to,
    subject: 'Confirm your new email address',
    text:
      `Someone asked to use ${input.to} as the email address of their account.\n\n` +
      `To confirm, open ${link}\n` +
      `or send uid=${input.uid} and token=${input.token} to POST /auth/users/set_email/confirm/.\n` +
      `Until then the account keeps its current address.\n\n` +
      `The link works once and expires at ${input.expiresAt.toISOString()}. If you did not ask for this, ignore this mail.\n`,
  };
}

/** To the current address: a change was asked for, and what to do if it was not the owner. */
export function emailChangeNoticeMail(input: { to: string; newEmail: string }): MailMessage {
  return {
    to: input.to,
    subject: 'Your email address is about to change',
    text:
      `Someone signed in to your account asked to change its email address from ${input.to} to ${input.newEmail}.\n\n` +
      `Nothing changes until the link mailed to ${input.newEmail} is opened.\n` +
      `If this was not you, change your password now (POST /auth/users/set_password/, or ` +
      `POST /auth/users/reset_password/ to get a reset link): whoever asked knew it.\n`,
  };
}
