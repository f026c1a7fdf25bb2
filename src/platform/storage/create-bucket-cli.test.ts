import { execFile } from 'node:child_process';
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestS3, type TestS3 } from '../../../test/support/s3.js';

/* `npm run create-bucket` (the compose file's one-shot step), run as a process against a local S3 server. */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let s3: TestS3;

beforeAll(async () => {
  s3 = await startTestS3();
});
afterAll(async () => {
  await s3.close();
});

function createBucket(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/platform/storage/create-bucket-cli.ts'],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

describe('create-bucket', () => {
  it('creates the bucket once, then finds it', async () => {
    const env = {
      STORAGE_BACKEND: 's3',
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: 'wsai-created-by-cli',
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
    };
    const first = await createBucket(env);
    expect(first).toMatchObject({ code: 0, stdout: 'bucket wsai-created-by-cli created\n' });
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const head = await client.send(new HeadBucketCommand({ Bucket: 'wsai-created-by-cli' }));
    expect(head.$metadata.httpStatusCode).toBe(200);
    client.destroy();

    const second = await createBucket(env);
    expect(second).toMatchObject({ code: 0, stdout: 'bucket wsai-created-by-cli exists\n' });
  });

  it('gives up with exit 1 when the store never answers', async () => {
    const result = await createBucket({
      STORAGE_BACKEND: 's3',
      S3_ENDPOINT: 'http://127.0.0.1:9', // discard port: nothing listens
      S3_BUCKET: 'never',
      S3_ACCESS_KEY_ID: 'x',
      S3_SECRET_ACCESS_KEY: 'y',
      S3_FORCE_PATH_STYLE: 'true',
      CREATE_BUCKET_WAIT_SECONDS: '1',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('cannot create bucket never:');
  });

  it('does nothing on local storage', async () => {
    expect(await createBucket({})).toMatchObject({ code: 0, stdout: 'STORAGE_BACKEND is not s3: no bucket to create\n' });
  });
});
