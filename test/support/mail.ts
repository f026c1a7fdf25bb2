import { asc, eq } from 'drizzle-orm';
import { mailOutbox } from '../../src/platform/mail/mail.table.js';
import type { TestApp } from './app.js';

export type OutboxMail = typeof mailOutbox.$inferSelect;

/** Every mail recorded for `to` (any transport), oldest first. */
export function mailsTo(t: TestApp, to: string): Promise<OutboxMail[]> {
  return t.deps.database.db.select().from(mailOutbox).where(eq(mailOutbox.to, to)).orderBy(asc(mailOutbox.createdAt));
}

/** The newest mail recorded for `to`; fails the test when there is none. */
export async function lastMailTo(t: TestApp, to: string): Promise<OutboxMail> {
  const mails = await mailsTo(t, to);
  const mail = mails.at(-1);
  if (!mail) throw new Error(`no mail to ${to}`);
  return mail;
}

/** The secret a mail carries as `token=<secret>` (activation, email change, invitation links). */
export function tokenIn(mail: { text: string }): string {
  const match = /token=([\w-]+)/.exec(mail.text);
  if (!match) throw new Error(`no token in mail: ${mail.text}`);
  return match[1]!;
}
