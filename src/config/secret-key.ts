import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './env.js';

/**
 * SECRET_KEY signs storage URLs. When it is not configured, one is generated on first start and
 * kept in DATA_DIR so restarts (and every process sharing DATA_DIR) agree on it.
 */
export function resolveSecretKey(config: Config): Config {
  if (config.SECRET_KEY) return config;
  const file = path.resolve(config.DATA_DIR, 'secret_key');
  let key: string;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(path.dirname(file), { recursive: true });
    key = randomBytes(48).toString('base64url');
    // 'wx' fails if another process created it first; then read theirs.
    try {
      writeFileSync(file, key, { mode: 0o600, flag: 'wx' });
    } catch {
      key = readFileSync(file, 'utf8').trim();
    }
  }
  return { ...config, SECRET_KEY: key };
}
