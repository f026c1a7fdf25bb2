import contentDisposition from 'content-disposition';
import { ValidationError } from '../errors.js';

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
export const MAX_KEY_LENGTH = 512;

/**
 * Object keys are `/`-separated segments of letters, digits, `.`, `_` and `-`, no segment
 * starting with `.` (so no `.`, `..` or hidden names), no leading, trailing or doubled `/`.
 * Both adapters apply the same rule, so a key that works in development works on S3, and a key
 * can never leave the local storage directory or need URL encoding.
 */
export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new ValidationError(`Invalid storage key: 1 to ${MAX_KEY_LENGTH} characters required.`, undefined, 'invalid_storage_key');
  }
  if (!key.split('/').every((segment) => SEGMENT.test(segment))) {
    throw new ValidationError('Invalid storage key.', undefined, 'invalid_storage_key');
  }
}

/**
 * `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<RFC 5987 encoding>`: every
 * browser gets a safe name, modern ones the exact one.
 */
export function attachmentDisposition(filename: string): string {
  const name = filename.trim() || 'download';
  const fallback = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/g, '_');
  return contentDisposition(name, { type: 'attachment', fallback });
}
