import type { Logger } from 'pino';
import { createLogger } from '../../src/platform/logger.js';

export interface CapturedLog {
  log: Logger;
  /** Every line written so far, parsed. */
  lines(): Array<Record<string, unknown> & { level: number; msg?: string }>;
}

/** A real pino logger that keeps its output in memory, so tests can assert what was logged. */
export function captureLog(level = 'info'): CapturedLog {
  const raw: string[] = [];
  const log = createLogger(level, { write: (line: string) => void raw.push(line) });
  return { log, lines: () => raw.map((line) => JSON.parse(line) as ReturnType<CapturedLog['lines']>[number]) };
}
