import { type Job, Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { createRedisClient, firstConnection, quitRedis } from '../redis.js';
import { withTimeout } from '../timeout.js';
import { errorMessage } from './jobs.js';
import type { DeliveryState, JobQueue } from './port.js';

export interface BullmqQueueOptions {
  url: string;
  /** REDIS_PREFIX: every BullMQ key starts with it. */
  prefix: string;
  concurrency: number;
  log: Logger;
  /** Longest a delivery (or a state lookup) may wait on Redis before it fails (REDIS_COMMAND_TIMEOUT_MS). */
  commandTimeoutMs?: number;
  /** One queue carries every job name (default `jobs`). */
  queueName?: string;
}

/** Finished deliveries are kept briefly for operators; the database keeps the outcome. */
const KEEP_COMPLETED = { age: 3600, count: 10_000 };
const KEEP_FAILED = { age: 24 * 3600, count: 10_000 };
const PENDING_STATES = ['wait', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

function toDeliveryState(state: string): DeliveryState {
  switch (state) {
    case 'waiting':
    case 'prioritized':
    case 'waiting-children':
      return 'waiting';
    case 'delayed':
    case 'active':
    case 'completed':
    case 'failed':
      return state;
    default:
      return 'missing';
  }
}

/**
 * BullMQ as the transport of the distributed profile. Delivery ids are UUIDs, which BullMQ
 * accepts as job ids (no ':' and not an integer), and adding an id that still exists is a no-op.
 * Each delivery runs once (attempts: 1): retries are new deliveries decided by the job system.
 */
export function createBullmqQueue(options: BullmqQueueOptions): JobQueue {
  const { url, prefix, concurrency, log } = options;
  const queueName = options.queueName ?? 'jobs';
  const commandTimeoutMs = options.commandTimeoutMs ?? 1500;
  // The producer fails fast while Redis is unreachable (no offline queue, bounded commands): the
  // job is already recorded in the database and the reconciler delivers it later.
  const connection = createRedisClient(url, log, 'queue', {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: commandTimeoutMs,
  });
  const queue = new Queue(queueName, {
    connection,
    prefix,
    defaultJobOptions: { attempts: 1, removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED },
  });
  queue.on('error', (error: Error) => log.warn({ err: error }, 'job queue error'));
  // Commands fail at once while disconnected; only the very first connection is waited for.
  const ready = firstConnection(connection, commandTimeoutMs);
  let worker: Worker | undefined;
  let workerConnection: ReturnType<typeof createRedisClient> | undefined;
  let closed = false;

  return {
    kind: 'bullmq',

    async deliver(delivery, deliverOptions = {}) {
      if (closed) throw new Error('The job queue is closed');
      const delayMs = Math.max(0, Math.round(deliverOptions.delayMs ?? 0));
      const data = { jobId: delivery.jobId };
      await ready();
      await withTimeout(
        queue.add(delivery.name, data, { jobId: delivery.deliveryId, ...(delayMs > 0 ? { delay: delayMs } : {}) }),
        commandTimeoutMs,
        'delivering a job to Redis',
      );
    },

    async state(deliveryId) {
      await ready();
      return toDeliveryState(await withTimeout(queue.getJobState(deliveryId), commandTimeoutMs, 'reading a job state from Redis'));
    },

    async startWorker(handler) {
      if (closed) throw new Error('The job queue is closed');
      if (worker) return;
      // A worker blocks on Redis: BullMQ requires maxRetriesPerRequest null on this connection.
      workerConnection = createRedisClient(url, log, 'queue-worker', { maxRetriesPerRequest: null });
      const process = (job: Job<{ jobId: string }>) => handler({ name: job.name, jobId: job.data.jobId, deliveryId: job.id ?? '' });
      worker = new Worker(queueName, process, { connection: workerConnection, prefix, concurrency, autorun: false });
      worker.on('error', (error: Error) => log.warn({ err: error }, 'job worker error'));
      worker.on('failed', (job, error) => {
        if (job) log.warn({ err: error, job: job.name, jobId: job.data.jobId }, `job delivery failed: ${errorMessage(error)}`);
      });
      // run() resolves only when the worker stops; errors are reported through 'error'.
      worker.run().catch((error: unknown) => log.error({ err: error }, 'job worker stopped'));
      await worker.waitUntilReady();
    },

    async drain(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const counts = await queue.getJobCounts(...PENDING_STATES);
        if (Object.values(counts).every((n) => n === 0)) return;
        if (Date.now() > deadline) throw new Error(`The job queue did not drain in time: ${JSON.stringify(counts)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },

    async ping() {
      await ready();
      await connection.ping();
    },

    async close() {
      if (closed) return;
      closed = true;
      // Worker.close() lets running deliveries finish; waiting ones stay in Redis for other workers.
      if (worker) await worker.close();
      await queue.close().catch((error: unknown) => log.warn({ err: error }, 'closing the job queue failed'));
      if (workerConnection) await quitRedis(workerConnection);
      await quitRedis(connection);
    },
  };
}

