import { setTimeout as sleep } from 'node:timers/promises';
import { CreateBucketCommand, HeadBucketCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { loadConfig } from '../../config/env.js';

/**
 * `npm run create-bucket`: creates S3_BUCKET on the configured store when it does not exist (a
 * deployment's one-shot step, such as the `create-bucket` service of compose.yaml). Waits up to
 * CREATE_BUCKET_WAIT_SECONDS (default 60) for a store that is still starting.
 */
const config = loadConfig();
if (config.STORAGE_BACKEND !== 's3') {
  process.stdout.write('STORAGE_BACKEND is not s3: no bucket to create\n');
  process.exit(0);
}
const bucket = config.S3_BUCKET!;
const client = new S3Client({
  region: config.S3_REGION,
  ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
  forcePathStyle: config.S3_FORCE_PATH_STYLE,
  credentials: { accessKeyId: config.S3_ACCESS_KEY_ID!, secretAccessKey: config.S3_SECRET_ACCESS_KEY! },
  maxAttempts: 1,
});
const deadline = Date.now() + Number(process.env.CREATE_BUCKET_WAIT_SECONDS ?? 60) * 1000;

const status = (error: unknown) => (error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined);

for (;;) {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
    process.stdout.write(`bucket ${bucket} exists\n`);
    break;
  } catch (error) {
    try {
      if (status(error) !== 404) throw error;
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      process.stdout.write(`bucket ${bucket} created\n`);
      break;
    } catch (failure) {
      // A 4xx other than 404 (bad credentials, a bucket owned by someone else) will not change by waiting.
      const code = status(failure);
      if ((code !== undefined && code >= 400 && code < 500 && code !== 404) || Date.now() > deadline) {
        process.stderr.write(`cannot create bucket ${bucket}: ${(failure as Error).name}: ${(failure as Error).message}\n`);
        process.exit(1);
      }
      await sleep(1000); // the store is not answering yet
    }
  }
}
client.destroy();
