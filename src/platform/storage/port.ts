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

/** Object storage: a local directory served through app-signed URLs, or any S3-compatible store. */
export interface ObjectStorage {
  readonly kind: 'local' | 's3';
  put(key: string, body: Buffer | Readable, options: { contentType: string; contentLength?: number }): Promise<void>;
  /** Throws NotFoundError when there is no such object. */
  get(key: string): Promise<Readable>;
  /** null when there is no such object. */
  head(key: string): Promise<StoredObjectInfo | null>;
  /** Deleting a missing object is not an error. */
  delete(key: string): Promise<void>;
  createUploadUrl(
    key: string,
    options: { contentType: string; expiresInSeconds: number; maxBytes?: number },
  ): Promise<SignedUpload>;
  /** The download is served as an attachment named `filename`. */
  createDownloadUrl(
    key: string,
    options: { filename: string; contentType?: string; expiresInSeconds: number },
  ): Promise<SignedDownload>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
