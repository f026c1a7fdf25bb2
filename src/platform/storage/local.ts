import { randomUUID } from 'node:crypto';
import { constants, createReadStream, createWriteStream } from 'node:fs';
import { access, copyFile, link, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConflictError, NotFoundError, PayloadTooLargeError, PermissionDeniedError, StorageFullError } from '../errors.js';
import { hmacSha256, safeEqual } from '../secrets.js';
import { assertValidKey } from './keys.js';
import type { ObjectStorage, StoredObjectInfo } from './port.js';

export interface LocalStorageOptions {
  /** The storage directory (`${DATA_DIR}/files`). */
  root: string;
  /** SECRET_KEY; URL signatures use a key derived from it. */
  secret: string;
  /** Absolute base of the signed URLs (PUBLIC_BASE_URL). */
  publicBaseUrl: string;
  /** Largest upload accepted through a signed URL that names no smaller limit. */
  maxUploadBytes: number;
}

/** What a valid signed upload URL allows. */
export interface UploadGrant {
  contentType: string;
  maxBytes: number;
}

/** What a valid signed download URL allows. */
export interface DownloadGrant {
  filename: string;
  contentType: string | undefined;
}

type Query = Record<string, unknown>;

/** The local adapter plus what its HTTP routes (local.routes.ts) need. */
export interface LocalStorage extends ObjectStorage {
  readonly kind: 'local';
  /** Throws 403 AppErrors for a missing, tampered or expired signature or a wrong Content-Type. */
  verifyUpload(key: string, query: Query, contentType: string | undefined): UploadGrant;
  verifyDownload(key: string, query: Query): DownloadGrant;
  /**
   * Streams `body` into the object, refusing (413) more than `maxBytes`; all or nothing. With
   * `once`, an existing object is never replaced: 409 `upload_already_used` (the signed upload URLs).
   */
  write(key: string, body: Readable | Buffer, options: { contentType: string; maxBytes?: number; once?: boolean }): Promise<void>;
  /** The object's bytes as a stream, with its stored info (NotFoundError when absent). */
  open(key: string): Promise<{ stream: Readable; info: StoredObjectInfo }>;
}

export const UPLOAD_PATH = '/files/upload/';
export const DOWNLOAD_PATH = '/files/download/';

const normaliseType = (value: string) => value.trim().toLowerCase();

/**
 * Objects in a directory, reachable from outside only through URLs that this service signs
 * (HMAC-SHA256 over method, key, limits and expiry) and serves itself. Layout under `root`:
 * `<key>` the bytes, `.meta/<key>.json` the content type, `.tmp/` uploads in progress (a write
 * becomes visible by an atomic rename, so readers never see half an object). Keys cannot start
 * a segment with `.`, so they never collide with those folders.
 */
export function createLocalStorage(options: LocalStorageOptions): LocalStorage {
  const root = path.resolve(options.root);
  const baseUrl = options.publicBaseUrl.replace(/\/+$/, '');
  // A key used only for URL signatures, so a signature never doubles as any other token.
  const signingKey = hmacSha256(options.secret, 'wsai:storage-url-signing:v1');
  // JSON framing keeps the fields apart whatever they contain (a filename may hold anything).
  const sign = (...parts: Array<string | number>) => hmacSha256(signingKey, JSON.stringify(parts.map(String)), 'base64url');

  function resolvePath(dir: string, key: string, suffix = ''): string {
    assertValidKey(key);
    const full = path.resolve(dir, key + suffix);
    // Belt and braces: the key rule already forbids anything that could escape the directory.
    if (!full.startsWith(dir + path.sep)) throw new NotFoundError();
    return full;
  }
  const objectPath = (key: string) => resolvePath(root, key);
  const metaPath = (key: string) => resolvePath(path.join(root, '.meta'), key, '.json');

  async function readInfo(key: string): Promise<StoredObjectInfo | null> {
    let size: number;
    try {
      const stats = await stat(objectPath(key));
      if (!stats.isFile()) return null;
      size = stats.size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw error;
    }
    let contentType: string | undefined;
    try {
      contentType = (JSON.parse(await readFile(metaPath(key), 'utf8')) as { contentType?: string }).contentType;
    } catch {
      contentType = undefined;
    }
    return { size, contentType };
  }

  function checkSignature(expected: string, given: unknown, expires: number): void {
    if (typeof given !== 'string' || !safeEqual(expected, given)) {
      throw new PermissionDeniedError('The URL signature is invalid.', 'invalid_signature');
    }
    if (Date.now() > expires * 1000) throw new PermissionDeniedError('The URL has expired.', 'url_expired');
  }

  function readExpiry(query: Query): number {
    const exp = Number(query.exp);
    if (typeof query.exp !== 'string' || !Number.isSafeInteger(exp)) {
      throw new PermissionDeniedError('The URL signature is invalid.', 'invalid_signature');
    }
    return exp;
  }

  const urlFor = (prefix: string, key: string, params: Record<string, string>) =>
    `${baseUrl}${prefix}${key.split('/').map(encodeURIComponent).join('/')}?${new URLSearchParams(params).toString()}`;

  const storage: LocalStorage = {
    kind: 'local',

    async put(key, body, { contentType }) {
      await storage.write(key, body, { contentType });
    },

    async write(key, body, { contentType, maxBytes, once }) {
      const target = objectPath(key);
      const meta = metaPath(key);
      // Fails fast before reading the body; the exclusive link below decides races.
      if (once && (await readInfo(key))) throw uploadAlreadyUsed();
      const source = Buffer.isBuffer(body) ? Readable.from([body]) : body;
      const tmpDir = path.join(root, '.tmp');
      await mkdir(tmpDir, { recursive: true });
      const tmp = path.join(tmpDir, randomUUID());
      const metaTmp = `${tmp}.meta`;
      const sink = createWriteStream(tmp, { flags: 'wx' });
      try {
        await pipeline(maxBytes === undefined ? source : limitBytes(source, maxBytes), sink);
        await writeFile(metaTmp, JSON.stringify({ contentType }), { flag: 'wx' });
        await mkdir(path.dirname(meta), { recursive: true });
        await mkdir(path.dirname(target), { recursive: true });
        if (once) {
          // link() never replaces an existing name: of two racing uploads exactly one wins.
          await link(tmp, target).catch((error: NodeJS.ErrnoException) => {
            throw error.code === 'EEXIST' ? uploadAlreadyUsed() : error;
          });
          await rm(tmp, { force: true });
          await rename(metaTmp, meta);
          return;
        }
        // Metadata first: when the new bytes appear, their content type is already in place.
        await rename(metaTmp, meta);
        await rename(tmp, target);
      } catch (error) {
        // pipeline rejects at the first error, possibly before the file is even open (a body
        // refused at its first chunk while the thread pool is busy): removing it before the sink
        // has closed could run first and leave the file behind in .tmp.
        if (!sink.closed) await new Promise<void>((resolve) => sink.once('close', () => resolve()));
        await Promise.all([rm(tmp, { force: true }), rm(metaTmp, { force: true })]);
        // A full disk (or quota) is the operator's problem, not a bug: say so, and store nothing.
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOSPC' || code === 'EDQUOT') throw new StorageFullError();
        throw error;
      }
    },

    async get(key) {
      return (await storage.open(key)).stream;
    },

    async open(key) {
      const info = await readInfo(key);
      if (!info) throw new NotFoundError('No such object.', 'object_not_found');
      return { stream: createReadStream(objectPath(key)), info };
    },

    head: readInfo,

    async delete(key) {
      await rm(objectPath(key), { force: true });
      await rm(metaPath(key), { force: true });
    },

    async commitUpload(uploadKey, key) {
      const info = await readInfo(uploadKey);
      if (!info) throw new NotFoundError('No such object.', 'object_not_found');
      const target = objectPath(key);
      await mkdir(path.dirname(metaPath(key)), { recursive: true });
      await mkdir(path.dirname(target), { recursive: true });
      await copyFile(metaPath(uploadKey), metaPath(key)).catch(() => undefined);
      await rename(objectPath(uploadKey), target);
      // The placeholder keeps the upload URL refused (409) for the rest of its life.
      await writeFile(objectPath(uploadKey), '', { flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
    },

    async createUploadUrl(key, { contentType, expiresInSeconds, maxBytes }) {
      assertValidKey(key);
      const exp = Math.floor(Date.now() / 1000) + expiresInSeconds;
      const max = Math.min(maxBytes ?? options.maxUploadBytes, options.maxUploadBytes);
      const ct = normaliseType(contentType);
      const sig = sign('PUT', key, ct, max, exp);
      return {
        url: urlFor(UPLOAD_PATH, key, { ct, max: String(max), exp: String(exp), sig }),
        method: 'PUT',
        headers: { 'Content-Type': contentType },
        expiresAt: new Date(exp * 1000),
      };
    },

    async createDownloadUrl(key, { filename, contentType, expiresInSeconds }) {
      assertValidKey(key);
      const exp = Math.floor(Date.now() / 1000) + expiresInSeconds;
      const ct = contentType ?? '';
      const sig = sign('GET', key, filename, ct, exp);
      const params: Record<string, string> = { fn: filename, exp: String(exp), sig };
      if (ct) params.ct = ct;
      return { url: urlFor(DOWNLOAD_PATH, key, params), expiresAt: new Date(exp * 1000) };
    },

    verifyUpload(key, query, contentType) {
      assertValidKey(key);
      const exp = readExpiry(query);
      const ct = typeof query.ct === 'string' ? query.ct : '';
      const max = typeof query.max === 'string' ? query.max : '';
      checkSignature(sign('PUT', key, ct, max, exp), query.sig, exp);
      if (!contentType || normaliseType(contentType) !== ct) {
        throw new PermissionDeniedError('The Content-Type header does not match the signed upload.', 'content_type_mismatch');
      }
      return { contentType: ct, maxBytes: Number(max) };
    },

    verifyDownload(key, query) {
      assertValidKey(key);
      const exp = readExpiry(query);
      const fn = typeof query.fn === 'string' ? query.fn : '';
      const ct = typeof query.ct === 'string' ? query.ct : '';
      checkSignature(sign('GET', key, fn, ct, exp), query.sig, exp);
      return { filename: fn, contentType: ct || undefined };
    },

    async ping() {
      await mkdir(root, { recursive: true });
      await access(root, constants.W_OK);
    },

    async close() {},
  };
  return storage;
}

const uploadAlreadyUsed = () =>
  new ConflictError('This upload URL was already used; ask for a new upload.', 'upload_already_used');

/**
 * Passes `source` through, failing with 413 past `limit` bytes. The source is piped, not
 * pipelined, so an over-long request body is left to the HTTP server (which drains or closes
 * it) and the 413 response can still be sent.
 */
function limitBytes(source: Readable, limit: number): Readable {
  let seen = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > limit) callback(new PayloadTooLargeError(`The upload is larger than the allowed ${limit} bytes.`));
      else callback(null, chunk);
    },
  });
  source.once('error', (error) => counter.destroy(error));
  source.pipe(counter);
  return counter;
}

/** The local adapter (whose URLs the app itself must serve), as opposed to S3 or a test's own. */
export function isLocalStorage(storage: ObjectStorage): storage is LocalStorage {
  return storage.kind === 'local' && 'verifyUpload' in storage && 'verifyDownload' in storage;
}
