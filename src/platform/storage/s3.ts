import type { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { NotFoundError } from '../errors.js';
import { assertValidKey, attachmentDisposition } from './keys.js';
import type { ObjectStorage } from './port.js';

export interface S3StorageOptions {
  /** S3_ENDPOINT; unset means AWS itself. */
  endpoint?: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** S3_FORCE_PATH_STYLE: `endpoint/bucket/key` instead of `bucket.endpoint/key` (MinIO, most clones). */
  forcePathStyle: boolean;
}

function isNotFound(error: unknown): boolean {
  if (!(error instanceof S3ServiceException)) return false;
  return error.name === 'NotFound' || error.name === 'NoSuchKey' || error.$metadata.httpStatusCode === 404;
}

/**
 * Any S3-compatible store. Clients upload and download directly with presigned URLs, so bytes
 * never pass through the API. A presigned PUT signs the Content-Type but cannot cap the size:
 * callers check the stored size with `head()` before accepting an upload (`maxBytes` is only
 * enforced by the local adapter).
 */
export function createS3Storage(options: S3StorageOptions): ObjectStorage {
  const { bucket } = options;
  const client = new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle,
    credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
    // Newer SDKs add CRC checksums to every request by default, which presigned PUTs from
    // browsers cannot send and many S3 clones reject: only when the operation requires it.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });

  return {
    kind: 's3',

    async put(key, body, { contentType, contentLength }) {
      assertValidKey(key);
      // A stream of unknown length cannot be sent with one PutObject: buffer it (callers that
      // stream large objects pass contentLength).
      const payload = Buffer.isBuffer(body) || contentLength !== undefined ? body : await collect(body);
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: payload,
          ContentType: contentType,
          ...(contentLength !== undefined ? { ContentLength: contentLength } : {}),
        }),
      );
    },

    async get(key) {
      assertValidKey(key);
      try {
        const result = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return result.Body as Readable;
      } catch (error) {
        if (isNotFound(error)) throw new NotFoundError('No such object.', 'object_not_found');
        throw error;
      }
    },

    async head(key) {
      assertValidKey(key);
      try {
        const result = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return { size: result.ContentLength ?? 0, contentType: result.ContentType };
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },

    async delete(key) {
      assertValidKey(key);
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },

    async createUploadUrl(key, { contentType, expiresInSeconds }) {
      assertValidKey(key);
      // Content-Type and If-None-Match stay signed headers, so the client must send exactly these:
      // a conditional write (S3, R2, MinIO and others) refuses a PUT over an existing object (412).
      const url = await getSignedUrl(
        client,
        new PutObjectCommand({ Bucket: bucket, Key: key, ContentType: contentType, IfNoneMatch: '*' }),
        { expiresIn: expiresInSeconds, signableHeaders: new Set(['content-type', 'if-none-match']) },
      );
      return {
        url,
        method: 'PUT',
        headers: { 'Content-Type': contentType, 'If-None-Match': '*' },
        expiresAt: new Date(Date.now() + expiresInSeconds * 1000),
      };
    },

    async commitUpload(uploadKey, key) {
      assertValidKey(uploadKey);
      assertValidKey(key);
      try {
        // A server-side copy (up to 5 GB in one request): the bytes never pass through the service.
        await client.send(new CopyObjectCommand({ Bucket: bucket, Key: key, CopySource: `${bucket}/${uploadKey}` }));
      } catch (error) {
        if (isNotFound(error)) throw new NotFoundError('No such object.', 'object_not_found');
        throw error;
      }
      // The placeholder keeps the conditional upload URL refused; it costs no stored bytes.
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: uploadKey, Body: Buffer.alloc(0), ContentLength: 0 }));
    },

    async createDownloadUrl(key, { filename, contentType, expiresInSeconds }) {
      assertValidKey(key);
      const url = await getSignedUrl(
        client,
        new GetObjectCommand({
          Bucket: bucket,
          Key: key,
          ResponseContentDisposition: attachmentDisposition(filename),
          ...(contentType ? { ResponseContentType: contentType } : {}),
        }),
        { expiresIn: expiresInSeconds },
      );
      return { url, expiresAt: new Date(Date.now() + expiresInSeconds * 1000) };
    },

    async ping() {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
    },

    async close() {
      client.destroy();
    },
  };
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}
