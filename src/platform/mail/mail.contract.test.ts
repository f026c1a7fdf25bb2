import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { pino } from 'pino';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../../../test/support/db.js';
import { randomToken } from '../secrets.js';
import { mailOutbox } from './mail.table.js';
import { createOutboxMailer } from './outbox.js';
import type { Mailer } from './port.js';
import { createSmtpMailer } from './smtp.js';

/**
 * Both mailers record every message in mail_outbox; the SMTP one also delivers it, here to a
 * real SMTP server listening on a random local port.
 */

interface Received {
  from: string | undefined;
  to: string[];
  raw: string;
}

const log = pino({ level: 'silent' });
const received: Received[] = [];
let smtp: SMTPServer;
let smtpUrl: string;
let database: TestDatabase;

beforeAll(async () => {
  database = await testDatabase();
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address.startsWith('bounce')) callback(new Error('Mailbox unavailable'));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

const adapters = [
  { kind: 'log', make: (): Mailer => createOutboxMailer(database.db, log) },
  {
    kind: 'smtp',
    make: (): Mailer => createSmtpMailer({ url: smtpUrl, from: 'Workspace AI <no-reply@example.test>', db: database.db, log }),
  },
] as const;

const outboxRows = (to: string) => database.db.select().from(mailOutbox).where(eq(mailOutbox.to, to));

describe.each(adapters)('mailer contract: $kind', ({ kind, make }) => {
  let mailer: Mailer;
  beforeAll(() => {
    mailer = make();
  });
  afterAll(async () => {
    await mailer.close();
  });

  it('records the message in the outbox with its transport', async () => {
    expect(mailer.kind).toBe(kind);
    const to = `ada-${randomToken(6).toLowerCase()}@example.test`;
    await mailer.send({ to, subject: 'You are invited', text: 'Accept: http://localhost/accept/1', html: '<p>Accept</p>' });
    const rows = await outboxRows(to);
    expect(rows).toEqual([
      expect.objectContaining({
        to,
        subject: 'You are invited',
        text: 'Accept: http://localhost/accept/1',
        html: '<p>Accept</p>',
        transport: kind,
        error: null,
        sentAt: expect.any(Date),
      }),
    ]);
  });

  it.skipIf(kind !== 'smtp')('delivers the message over SMTP', async () => {
    const to = `grace-${randomToken(6).toLowerCase()}@example.test`;
    await mailer.send({ to, subject: 'Reset your password', text: 'Use this link: http://localhost/reset/abc' });
    const mail = received.find((r) => r.to.includes(to));
    expect(mail).toBeDefined();
    expect(mail!.from).toBe('no-reply@example.test');
    expect(mail!.raw).toMatch(/^Subject: Reset your password\r?$/m);
    expect(mail!.raw).toMatch(new RegExp(`^To: ${to.replace('.', '\\.')}\\r?$`, 'm'));
    expect(mail!.raw).toContain('Use this link: http://localhost/reset/abc');
  });

  it.skipIf(kind !== 'smtp')('records a failed delivery with its error and rethrows', async () => {
    const to = `bounce-${randomToken(6).toLowerCase()}@example.test`;
    await expect(mailer.send({ to, subject: 'Hello', text: 'Never arrives' })).rejects.toThrow(/Mailbox unavailable/);
    const rows = await outboxRows(to);
    expect(rows).toEqual([
      expect.objectContaining({ to, transport: 'smtp', error: expect.stringMatching(/Mailbox unavailable/), sentAt: null }),
    ]);
    expect(received.some((r) => r.to.includes(to))).toBe(false);
  });
});

describe('SMTP mailer with the server unreachable', () => {
  it('fails, records the error and rethrows', async () => {
    // Port 1 refuses connections at once.
    const mailer = createSmtpMailer({ url: 'smtp://127.0.0.1:1', from: 'x@example.test', db: database.db, log });
    const to = `nobody-${randomToken(6).toLowerCase()}@example.test`;
    await expect(mailer.send({ to, subject: 'Hi', text: 'Hi' })).rejects.toThrow();
    const rows = await outboxRows(to);
    expect(rows).toEqual([expect.objectContaining({ transport: 'smtp', error: expect.any(String), sentAt: null })]);
    await mailer.close();
  });
});
