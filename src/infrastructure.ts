import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config/env.js';
import type { Database } from './db/client.js';
import type { Deps, DepsOverrides } from './deps.js';
import { createMemoryEventBuffer } from './platform/event-buffer/memory.js';
import { createOutboxMailer } from './platform/mail/outbox.js';
import { createMemoryPubSub } from './platform/pubsub/memory.js';
import { createMemoryQueue } from './platform/queue/memory.js';
import { createMemoryRateLimiter } from './platform/ratelimit/memory.js';
import { createLocalStorage } from './platform/storage/local.js';

export type Infrastructure = Pick<Deps, 'queue' | 'pubsub' | 'limiter' | 'eventBuffer' | 'storage' | 'mailer'>;

/**
 * Chooses each adapter once, from configuration: Redis when REDIS_URL is set, else in-process.
 * The adapters of the other profile are never loaded (BullMQ, ioredis, the S3 SDK and nodemailer
 * are imported only when configured), which keeps the embedded profile's start-up short.
 */
export async function createInfrastructure(config: Config, log: Logger, database: Database, overrides: DepsOverrides): Promise<Infrastructure> {
  const redis = config.REDIS_URL;
  const prefix = config.REDIS_PREFIX;
  const commandTimeoutMs = config.REDIS_COMMAND_TIMEOUT_MS;
  const queue =
    overrides.queue ??
    (redis
      ? (await import('./platform/queue/bullmq.js')).createBullmqQueue({
          url: redis,
          prefix,
          concurrency: config.WORKER_CONCURRENCY,
          commandTimeoutMs,
          log: log.child({ module: 'queue' }),
        })
      : createMemoryQueue({ concurrency: config.WORKER_CONCURRENCY, log: log.child({ module: 'queue' }) }));
  const pubsub =
    overrides.pubsub ??
    (redis
      ? (await import('./platform/pubsub/redis.js')).createRedisPubSub({ url: redis, prefix, commandTimeoutMs, log: log.child({ module: 'pubsub' }) })
      : createMemoryPubSub({ log: log.child({ module: 'pubsub' }) }));
  const limiter =
    overrides.limiter ??
    (redis
      ? (await import('./platform/ratelimit/limiter.js')).createRedisRateLimiter({
          url: redis,
          prefix,
          commandTimeoutMs,
          log: log.child({ module: 'ratelimit' }),
        })
      : createMemoryRateLimiter());
  const bufferLimits = { ttlMs: config.STREAM_BUFFER_TTL_SECONDS * 1000, maxEvents: config.STREAM_BUFFER_MAX_EVENTS };
  const eventBuffer =
    overrides.eventBuffer ??
    (redis
      ? (await import('./platform/event-buffer/redis.js')).createRedisEventBuffer({
          url: redis,
          prefix,
          commandTimeoutMs,
          log: log.child({ module: 'event-buffer' }),
          ...bufferLimits,
        })
      : createMemoryEventBuffer(bufferLimits));
  const storage =
    overrides.storage ??
    (config.STORAGE_BACKEND === 's3'
      ? (await import('./platform/storage/s3.js')).createS3Storage({
          endpoint: config.S3_ENDPOINT,
          region: config.S3_REGION,
          // loadConfig refuses STORAGE_BACKEND=s3 without these.
          bucket: config.S3_BUCKET!,
          accessKeyId: config.S3_ACCESS_KEY_ID!,
          secretAccessKey: config.S3_SECRET_ACCESS_KEY!,
          forcePathStyle: config.S3_FORCE_PATH_STYLE,
        })
      : createLocalStorage({
          root: `${config.DATA_DIR}/files`,
          // resolveSecretKey (server, worker) or the test config always provide one.
          secret: config.SECRET_KEY!,
          publicBaseUrl: config.publicBaseUrl,
          maxUploadBytes: config.STORAGE_MAX_UPLOAD_BYTES,
        }));
  const mailLog = log.child({ module: 'mail' });
  const mailer =
    overrides.mailer ??
    (config.SMTP_URL
      ? (await import('./platform/mail/smtp.js')).createSmtpMailer({ url: config.SMTP_URL, from: config.MAIL_FROM, db: database.db, log: mailLog })
      : createOutboxMailer(database.db, mailLog, { directory: path.join(config.DATA_DIR, 'mail') }));
  return { queue, pubsub, limiter, eventBuffer, storage, mailer };
}

