import { randomUUID } from 'node:crypto';
import { type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { createRedisClient, quitRedis } from '../redis.js';
import {
  COMPLETED_RETENTION_SECONDS,
  DefinitionMap,
  FAILED_RETENTION_SECONDS,
  UnrecoverableJobError,
  drainTimeout,
  errorMessage,
  prepareEnqueue,
  runHandler,
} from './jobs.js';
import type { JobQueue } from './port.js';

export interface BullmqQueueOptions {
  url: string;
  /** REDIS_PREFIX: every BullMQ key starts with it. */
  prefix: string;
  concurrency: number;
  log: Logger;
  /** One queue carries every job name (default `jobs`). */
  queueName?: string;
}

/**
 * BullMQ ids may not contain ':' or look like integers. `name/` + URI-encoded id has neither
 * (names start with a letter and contain no '/', and encoding turns ':' and '/' into %XX), and
 * it is injective, so distinct (name, id) pairs never share a BullMQ id.
 */
export function toBullmqJobId(name: string, jobId: string): string {
  return `${name}/${encodeURIComponent(jobId)}`;
}

export function fromBullmqJobId(bullId: string | undefined): string {
  if (!bullId) return '';
  const slash = bullId.indexOf('/');
  return slash < 0 ? bullId : decodeURIComponent(bullId.slice(slash + 1));
}

/** Waiting in any form: a job in backoff sits in `delayed`, so drain waits for retries too. */
const PENDING_STATES = ['wait', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

export function createBullmqQueue(options: BullmqQueueOptions): JobQueue {
  const { url, prefix, concurrency, log } = options;
  const queueName = options.queueName ?? 'jobs';
  const definitions = new DefinitionMap();
  // BullMQ requires maxRetriesPerRequest: null on connections a worker may block on.
  const connection = createRedisClient(url, log, 'queue', { maxRetriesPerRequest: null });
  const queue = new Queue(queueName, {
    connection,
    prefix,
    defaultJobOptions: {
      // Finished jobs are kept (and so their ids stay taken) for the idempotency window.
      removeOnComplete: { age: COMPLETED_RETENTION_SECONDS },
      removeOnFail: { age: FAILED_RETENTION_SECONDS },
    },
  });
  queue.on('error', (error: Error) => log.warn({ err: error }, 'job queue error'));
  let worker: Worker | undefined;
  let workerConnection: ReturnType<typeof createRedisClient> | undefined;
  let closed = false;

  async function processJob(job: Job): Promise<void> {
    const definition = definitions.find(job.name);
    // A job from newer code that this process does not know: fail it rather than loop on it.
    if (!definition) throw new UnrecoverableError(`Unknown job "${job.name}"`);
    const attempt = job.attemptsMade + 1;
    const attempts = job.opts.attempts ?? 1;
    const context = { jobId: fromBullmqJobId(job.id), attempt, isFinalAttempt: attempt >= attempts };
    try {
      await runHandler(definition, job.data, context);
    } catch (error) {
      if (error instanceof UnrecoverableJobError) throw new UnrecoverableError(error.message);
      throw error;
    }
  }

  return {
    kind: 'bullmq',

    register(definition) {
      if (worker) throw new Error('Register jobs before starting the worker');
      definitions.add(definition);
    },

    async enqueue(name, payload, enqueueOptions = {}) {
      if (closed) throw new Error('The job queue is closed');
      const definition = definitions.get(name);
      const { data, delayMs } = prepareEnqueue(definition, payload, enqueueOptions);
      const id = enqueueOptions.jobId ?? randomUUID();
      // Adding an id that still exists (pending or retained) is a no-op in BullMQ.
      await queue.add(name, data, {
        jobId: toBullmqJobId(name, id),
        attempts: definition.attempts,
        backoff: { type: 'exponential', delay: definition.backoffMs },
        ...(delayMs > 0 ? { delay: delayMs } : {}),
      });
      return { jobId: id };
    },

    async startWorker() {
      if (closed) throw new Error('The job queue is closed');
      if (worker) return;
      workerConnection = createRedisClient(url, log, 'queue-worker', { maxRetriesPerRequest: null });
      worker = new Worker(queueName, processJob, { connection: workerConnection, prefix, concurrency, autorun: false });
      worker.on('error', (error: Error) => log.warn({ err: error }, 'job worker error'));
      worker.on('failed', (job, error) => {
        if (!job) return;
        const attempt = job.attemptsMade;
        const attempts = job.opts.attempts ?? 1;
        const fields = { err: error, job: job.name, jobId: fromBullmqJobId(job.id), attempt, attempts };
        if (attempt < attempts && !(error instanceof UnrecoverableError)) {
          log.warn(fields, `job failed, will retry: ${errorMessage(error)}`);
        } else {
          log.error(fields, `job failed for good: ${errorMessage(error)}`);
        }
      });
      // run() resolves only when the worker stops; errors are reported through 'error'.
      worker.run().catch((error: unknown) => log.error({ err: error }, 'job worker stopped'));
      await worker.waitUntilReady();
    },

    async drain(timeoutMs) {
      const deadline = Date.now() + drainTimeout(timeoutMs);
      for (;;) {
        const counts = await queue.getJobCounts(...PENDING_STATES);
        if (Object.values(counts).every((n) => n === 0)) return;
        if (Date.now() > deadline) {
          throw new Error(`The job queue did not drain in time: ${JSON.stringify(counts)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },

    async ping() {
      await connection.ping();
    },

    async close() {
      if (closed) return;
      closed = true;
      // Worker.close() lets running jobs finish; waiting jobs stay in Redis for other workers.
      if (worker) await worker.close();
      await queue.close();
      if (workerConnection) await quitRedis(workerConnection);
      await quitRedis(connection);
    },
  };
}
