import { pino, type Logger } from 'pino';

/** The process logger; Fastify uses it too, so every request line carries its request id. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["payment-signature"]'],
      censor: '[redacted]',
    },
  });
}
