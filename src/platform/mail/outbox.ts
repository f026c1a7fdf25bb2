import type { Logger } from 'pino';
import type { DbOrTx } from '../../db/client.js';
import { mailOutbox } from './mail.table.js';
import type { MailMessage, Mailer } from './port.js';

export function recordMail(db: DbOrTx, message: MailMessage, transport: 'log' | 'smtp', error?: string) {
  return db.insert(mailOutbox).values({
    to: message.to,
    subject: message.subject,
    text: message.text,
    html: message.html ?? null,
    transport,
    error: error ?? null,
    sentAt: error ? null : new Date(),
  });
}

/**
 * The embedded default: mail is not delivered anywhere, it is kept in the outbox table, where an
 * operator (or a test) reads it; the log says it was written (to whom, what subject) but not its
 * text, which holds reset, activation and invitation secrets.
 */
export function createOutboxMailer(db: DbOrTx, log: Logger): Mailer {
  return {
    kind: 'log',
    async send(message) {
      await recordMail(db, message, 'log');
      log.info({ to: message.to, subject: message.subject }, 'mail written to the mail_outbox table (its text is there, not in the log)');
    },
    async close() {},
  };
}
