/** The logging the webhook needs; pino and Fastify's request logger both fit. */
export interface WebhookLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/** Every line about an event names it. */
export function eventLog(base: WebhookLog, context: object): WebhookLog {
  return {
    info: (details, message) => base.info({ ...context, ...details }, message),
    warn: (details, message) => base.warn({ ...context, ...details }, message),
    error: (details, message) => base.error({ ...context, ...details }, message),
  };
}
