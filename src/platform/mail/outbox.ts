import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
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

/** Writes the message as a private text file in `directory` and returns its path. */
async function dropFile(directory: string, message: MailMessage): Promise<string> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = path.join(directory, `${stamp}-${randomBytes(3).toString('hex')}.txt`);
  await writeFile(file, `To: ${message.to}\nSubject: ${message.subject}\n\n${message.text}\n`, { mode: 0o600, flag: 'wx' });
  return file;
}

/**
 * The embedded default: mail is not delivered anywhere. It is kept in the outbox table and, when
 * `directory` is given (DATA_DIR/mail), written there as a private text file, where an operator
 * (or a test) reads it. The log says a message was written, to whom and where, but never its
 * text: that holds reset, activation and invitation secrets.
 */
export function createOutboxMailer(db: DbOrTx, log: Logger, options: { directory?: string } = {}): Mailer {
  return {
    kind: 'log',
    async send(message) {
      await recordMail(db, message, 'log');
      const file = options.directory ? await dropFile(options.directory, message) : undefined;
      log.info({ to: message.to, subject: message.subject, ...(file ? { file } : {}) }, 'mail written to the outbox (its text is not logged)');
    },
    async close() {},
  };
}
