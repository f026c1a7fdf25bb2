import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { S3RequestPresigner } from '@aws-sdk/s3-request-presigner';
import S3rver from 's3rver';

export interface TestS3 {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  close(): Promise<void>;
}

/** The service settings that point the s3 storage backend at a test server. */
export function s3StorageEnv(s3: TestS3): Record<string, string> {
  return {
    STORAGE_BACKEND: 's3',
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: s3.bucket,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    S3_FORCE_PATH_STYLE: 'true',
  };
}

// s3rver's fixed development credentials.
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const region = 'us-east-1';

/**
 * A local S3-compatible server on 127.0.0.1, a random port and a temporary directory, with a
 * fresh bucket. s3rver checks the expiry of presigned URLs but not their SigV4 signature, so a
 * small proxy in front of it does what S3 does: it recomputes the signature of every presigned
 * request from what actually arrived (path, query, signed headers) and answers 403
 * SignatureDoesNotMatch when it differs.
 */
export async function startTestS3(): Promise<TestS3> {
  const directory = mkdtempSync(path.join(tmpdir(), 'wsai-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true });
  const { port: upstreamPort } = await server.run();

  const proxy = http.createServer((req, res) => {
    verifyPresigned(req).then(
      (valid) => {
        if (!valid) {
          res.writeHead(403, { 'content-type': 'application/xml' });
          res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code></Error>');
          req.resume();
          return;
        }
        const upstream = http.request(
          { host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on('error', () => res.destroy());
        req.pipe(upstream);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  const admin = new S3Client({ endpoint, region, forcePathStyle: true, credentials });
  const presigner = new S3RequestPresigner({ ...admin.config });
  const bucket = 'wsai-test';
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));

  async function verifyPresigned(req: http.IncomingMessage): Promise<boolean> {
    const url = new URL(req.url ?? '/', endpoint);
    const given = url.searchParams.get('X-Amz-Signature');
    if (!given) return true; // the adapter's own API calls: not under test here
    const signedHeaders = (url.searchParams.get('X-Amz-SignedHeaders') ?? '').split(';').filter(Boolean);
    const headers: Record<string, string> = {};
    for (const name of signedHeaders) headers[name] = String(req.headers[name] ?? '');
    const query: Record<string, string> = {};
    for (const [key, value] of url.searchParams) if (key !== 'X-Amz-Signature') query[key] = value;
    const date = url.searchParams.get('X-Amz-Date') ?? '';
    const signingDate = new Date(date.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
    const signed = await presigner.presign(
      { method: req.method ?? 'GET', protocol: 'http:', hostname: '127.0.0.1', port: Number(url.port), path: url.pathname, query, headers },
      { signingDate, expiresIn: Number(url.searchParams.get('X-Amz-Expires')), signableHeaders: new Set(signedHeaders) },
    );
    return signed.query?.['X-Amz-Signature'] === given;
  }

  return {
    endpoint,
    bucket,
    region,
    ...credentials,
    async close() {
      admin.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
