import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A URL-safe random secret with 256 bits of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Secrets are stored only as this digest, so a database leak reveals no usable token. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function hmacSha256(key: string | Buffer, value: string, encoding: 'hex' | 'base64url' = 'hex'): string {
  return createHmac('sha256', key).update(value).digest(encoding);
}

/** Constant-time comparison of two strings (false when lengths differ). */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
