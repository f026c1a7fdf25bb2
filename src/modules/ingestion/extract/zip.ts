/**
 * The one zip reader of extraction, for every archive-based format (DOCX, XLSX, PPTX, ODT, ODS,
 * ODP, EPUB). It reads the central directory, checks the archive limits before anything is
 * inflated (entry count, total uncompressed size, compression ratio of large entries), and inflates
 * an entry no further than its declared size (node:zlib's maxOutputLength), so a directory that lies
 * about the sizes cannot blow up either. Stored and deflated entries only; no zip64 (an office file
 * that needs it is far beyond the limits anyway).
 */
import { crc32, inflateRawSync } from 'node:zlib';
import { ExtractionError, type ExtractionLimits } from './types.js';

export interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  localOffset: number;
}

export interface ZipArchive {
  /** The entries in central-directory order. */
  entries: ZipEntry[];
  has(name: string): boolean;
  /** The inflated bytes of an entry, or undefined when the archive has no such entry. */
  read(name: string): Buffer | undefined;
  /** An entry decoded as UTF-8 (a BOM dropped), or undefined. */
  text(name: string): string | undefined;
  /** Inflates every entry once and throws if one does not match its declared size or CRC. */
  verify(): void;
}

/** Entries smaller than this are not held to the ratio limit (tiny XML parts compress very well). */
const RATIO_GRACE_BYTES = 1024 * 1024;

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

export function isZip(bytes: Buffer): boolean {
  return bytes.length >= 4 && bytes.readUInt32LE(0) === LOCAL;
}

function tooLarge(detail: string): ExtractionError {
  return new ExtractionError(
    'too_large',
    'This file is too large to read once unpacked (it expands to too much data or holds too many parts). Split it into smaller files and upload them again.',
    `archive limit: ${detail}`,
  );
}

/**
 * Opens a zip. `corruptMessage` is the user message when the bytes are not a readable zip (each
 * format words it for its own kind of file). Throws ExtractionError: `corrupt_file`,
 * `password_protected` (encrypted entries) or `too_large` (an archive limit).
 */
export function openZip(bytes: Buffer, limits: ExtractionLimits, corruptMessage: string): ZipArchive {
  const corrupt = (detail: string, cause?: unknown) =>
    new ExtractionError('corrupt_file', corruptMessage, `zip could not be read: ${detail}`, cause === undefined ? undefined : { cause });

  // The end-of-central-directory record: the last 22 bytes, or earlier when there is a comment.
  let eocd = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 0xffff); at--) {
    if (bytes.readUInt32LE(at) === EOCD) {
      eocd = at;
      break;
    }
  }
  if (!isZip(bytes) || eocd < 0) throw corrupt('no end of central directory');
  const count = bytes.readUInt16LE(eocd + 10);
  const directorySize = bytes.readUInt32LE(eocd + 12);
  const directoryOffset = bytes.readUInt32LE(eocd + 16);
  if (count === 0xffff || directoryOffset === 0xffffffff) throw tooLarge('zip64 archive');
  if (count > limits.maxZipEntries) throw tooLarge(`${count} entries > ${limits.maxZipEntries}`);
  if (directoryOffset + directorySize > eocd) throw corrupt('central directory out of range');

  const entries: ZipEntry[] = [];
  const byName = new Map<string, ZipEntry>();
  let total = 0;
  let at = directoryOffset;
  for (let i = 0; i < count; i++) {
    if (at + 46 > eocd || bytes.readUInt32LE(at) !== CENTRAL) throw corrupt(`bad central directory entry ${i}`);
    const flags = bytes.readUInt16LE(at + 8);
    const nameLength = bytes.readUInt16LE(at + 28);
    const entry: ZipEntry = {
      name: bytes.toString(flags & 0x800 ? 'utf8' : 'latin1', at + 46, at + 46 + nameLength),
      method: bytes.readUInt16LE(at + 10),
      flags,
      crc: bytes.readUInt32LE(at + 16),
      compressedSize: bytes.readUInt32LE(at + 20),
      uncompressedSize: bytes.readUInt32LE(at + 24),
      localOffset: bytes.readUInt32LE(at + 42),
    };
    at += 46 + nameLength + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
    if (entry.compressedSize === 0xffffffff || entry.uncompressedSize === 0xffffffff) throw tooLarge('zip64 entry');
    total += entry.uncompressedSize;
    if (total > limits.maxZipUncompressedBytes) throw tooLarge(`more than ${limits.maxZipUncompressedBytes} bytes uncompressed`);
    if (entry.uncompressedSize > RATIO_GRACE_BYTES && entry.uncompressedSize > Math.max(entry.compressedSize, 1) * limits.maxZipRatio) {
      throw tooLarge(`entry ${entry.name} compressed ${entry.compressedSize} → ${entry.uncompressedSize} bytes (ratio > ${limits.maxZipRatio})`);
    }
    entries.push(entry);
    if (!byName.has(entry.name)) byName.set(entry.name, entry);
  }

  const inflate = (entry: ZipEntry): Buffer => {
    if (entry.flags & 0x1) {
      throw new ExtractionError(
        'password_protected',
        'This file is password-protected. Remove the password and upload it again.',
        `zip entry ${entry.name} is encrypted`,
      );
    }
    const local = entry.localOffset;
    if (local + 30 > bytes.length || bytes.readUInt32LE(local) !== LOCAL) throw corrupt(`bad local header for ${entry.name}`);
    const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
    if (start + entry.compressedSize > bytes.length) throw corrupt(`entry ${entry.name} out of range`);
    const packed = bytes.subarray(start, start + entry.compressedSize);
    let data: Buffer;
    if (entry.method === 0) data = packed;
    else if (entry.method === 8) {
      try {
        // Never more than the declared size: a lying directory fails here instead of filling memory.
        data = inflateRawSync(packed, { maxOutputLength: Math.max(entry.uncompressedSize, 1) });
      } catch (error) {
        if (error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
          throw tooLarge(`entry ${entry.name} inflates beyond its declared ${entry.uncompressedSize} bytes`);
        }
        throw corrupt(`entry ${entry.name} does not inflate`, error);
      }
    } else throw corrupt(`entry ${entry.name} uses compression method ${entry.method}`);
    if (data.length !== entry.uncompressedSize) throw corrupt(`entry ${entry.name} is ${data.length} bytes, not ${entry.uncompressedSize}`);
    if (crc32(data) !== entry.crc) throw corrupt(`entry ${entry.name} fails its CRC`);
    return data;
  };

  return {
    entries,
    has: (name) => byName.has(name),
    read(name) {
      const entry = byName.get(name);
      return entry ? inflate(entry) : undefined;
    },
    text(name) {
      const data = this.read(name);
      if (!data) return undefined;
      const text = data.toString('utf8');
      return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    },
    verify() {
      for (const entry of entries) if (!entry.name.endsWith('/')) inflate(entry);
    },
  };
}

/** Resolves a zip path relative to the folder of `from` ("xl/workbook.xml" + "worksheets/a.xml"). */
export function resolvePath(from: string, target: string): string {
  const clean = target.split('#')[0]!;
  let decoded = clean;
  try {
    decoded = decodeURIComponent(clean);
  } catch {
    // keep it as written
  }
  const parts = decoded.startsWith('/') ? [] : from.split('/').slice(0, -1);
  for (const part of decoded.split('/')) {
    if (part === '..') parts.pop();
    else if (part && part !== '.') parts.push(part);
  }
  return parts.join('/');
}
