import type { Readable } from 'node:stream';

export interface StoredObjectInfo {
  size: number;
  contentType: string | undefined;
}

export interface SignedUpload {
  url: string;
  method: 'PUT';
  /** Headers the client must send with the PUT. */
  headers: Record<string, string>;
  expiresAt: Date;
}

export interface SignedDownload {
  url: string;
  expiresAt: Date;
}

/**
 * Object storage: a local directory served through app-signed URLs, or any S3-compatible store.
 * Keys follow one rule on every adapter (see keys.ts); an invalid key throws ValidationError.
 */
export interface ObjectStorage {
  readonly kind: 'local' | 's3';
  put(key: string, body: Buffer | Readable, options: { contentType: string; contentLength?: number }): Promise<void>;
  /** Throws NotFoundError when there is no such object. */
  get(key: string): Promise<Readable>;
  /** null when there is no such object. */
  head(key: string): Promise<StoredObjectInfo | null>;
  /** Deleting a missing object is not an error. */
  delete(key: string): Promise<void>;
  /**
   * A URL the client PUTs the bytes to, with `headers` (the Content-Type is signed). `maxBytes`
   * is enforced (413) by the local adapter only; a presigned S3 PUT cannot cap the size, so
   * callers always check the stored size with `head()` before accepting an upload.
   * The URL writes once: the local adapter refuses a PUT while the object exists (409
   * `upload_already_used`); the S3 URL signs `If-None-Match: *` (in `headers`), which S3 and the
   * stores that implement conditional writes refuse with 412. Stores that ignore the header let a
   * second PUT through, so callers upload to a key of their own and `commitUpload` it.
   */
  createUploadUrl(
    key: string,
    options: { contentType: string; expiresInSeconds: number; maxBytes?: number },
  ): Promise<SignedUpload>;
  /**
   * Moves an uploaded object from `uploadKey` to `key` inside the store (the bytes do not pass
   * through the service) and leaves an empty placeholder at `uploadKey`, so its upload URL stays
   * refused wherever the store honours the condition. Nothing a client holds can write to `key`.
   */
  commitUpload(uploadKey: string, key: string): Promise<void>;
  /** The download is served as an attachment named `filename`. */
  createDownloadUrl(
    key: string,
    options: { filename: string; contentType?: string; expiresInSeconds: number },
  ): Promise<SignedDownload>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
