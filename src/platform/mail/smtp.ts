import nodemailer from 'nodemailer';
import SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Logger } from 'pino';
import type { DbOrTx } from '../../db/client.js';
import { recordMail } from './outbox.js';
import type { Mailer } from './port.js';

export interface SmtpMailerOptions {
  /** SMTP_URL, such as smtp://user:pass@mail.example.com:587 or smtps://...:465. */
  url: string;
  /** MAIL_FROM. */
  from: string;
  db: DbOrTx;
  log: Logger;
}

/**
 * Delivers through SMTP (nodemailer, pooled connections) and records every message in the
 * outbox table, with `error` set when delivery failed; the failure is then rethrown so the
 * caller (usually a job) can retry.
 */
export function createSmtpMailer(options: SmtpMailerOptions): Mailer {
  const { db, log, from } = options;
  // Options given with the URL are merged by SMTPTransport (createTransport(url) would drop them).
  // Shorter timeouts than nodemailer's minutes-long defaults: a hung server must not hold a job.
  const transport = nodemailer.createTransport(
    new SMTPTransport({ url: options.url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }),
  );

  return {
    kind: 'smtp',
    async send(message) {
      try {
        const info = await transport.sendMail({
          from,
          to: message.to,
          subject: message.subject,
          text: message.text,
          ...(message.html ? { html: message.html } : {}),
        });
        await recordMail(db, message, 'smtp');
        log.info({ to: message.to, subject: message.subject, messageId: info.messageId }, 'mail sent');
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        await recordMail(db, message, 'smtp', reason).catch((recordError: unknown) =>
          log.error({ err: recordError }, 'could not record failed mail in the outbox'),
        );
        log.error({ err: error, to: message.to, subject: message.subject }, 'mail delivery failed');
        throw error;
      }
    },
    async close() {
      transport.close();
    },
  };
}
