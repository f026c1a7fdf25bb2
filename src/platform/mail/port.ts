export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/** Sends mail. Every adapter also records the message in the `mail_outbox` table. */
export interface Mailer {
  readonly kind: 'log' | 'smtp';
  send(message: MailMessage): Promise<void>;
  /** Throws when the transport cannot be reached (used by /readyz only where it matters). */
  close(): Promise<void>;
}
