import { type DestinationStream, type Logger, pino, stdSerializers } from 'pino';

/**
 * Drizzle's query errors carry the SQL and its parameters in `message`, `stack` and `params`:
 * a registration's password hash, a token's hash, a user's text. Parameters never reach a log;
 * the SQL text (which holds no values) stays for debugging.
 */
const SQL_PARAMS = /\nparams: [\s\S]*?(?=\n {4}at |\ncaused by: |$)/g;

function scrub(text: string): string {
  return text.replace(SQL_PARAMS, '\nparams: [redacted]');
}

/** pino's error serializer, with SQL parameters removed from the error and its causes. */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const out = stdSerializers.err(error) as unknown as Record<string, unknown>;
  if (typeof out.message === 'string') out.message = scrub(out.message);
  if (typeof out.stack === 'string') out.stack = scrub(out.stack);
  if ('params' in out) out.params = '[redacted]';
  if (out.cause instanceof Error) out.cause = serializeError(out.cause);
  return out;
}

/**
 * The process logger; Fastify uses it too, so every request line carries its request id.
 * Tests build theirs with this function as well, so they log exactly what production logs.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["payment-signature"]'],
        censor: '[redacted]',
      },
      serializers: { err: serializeError },
    },
    destination,
  );
}
