import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { JobCounts } from './jobs.repo.js';

export type RedriveReason = 'lease_expired' | 'delivery_lost' | 'unclaimed' | 'undelivered' | 'operator';

/**
 * The queue's Prometheus series. Counts by state come from the database (the source of truth)
 * at scrape time, so every process shows the same numbers; the totals and durations are counted
 * by the process that ran the work (workers expose them on WORKER_METRICS_PORT).
 */
export function createQueueMetrics(options: {
  registry: Registry;
  jobNames: readonly string[];
  log: Logger;
  counts: () => Promise<JobCounts[]>;
  liveWorkers: () => Promise<number>;
}) {
  const { registry, jobNames, log } = options;
  const registers = [registry];
  // One database round trip per scrape, shared by the gauges below.
  let snapshot: Promise<JobCounts[] | undefined> | undefined;
  const current = () => {
    snapshot ??= options
      .counts()
      .catch((error: unknown) => {
        log.warn({ err: error }, 'could not read job counts for /metrics');
        return undefined;
      })
      .finally(() => setTimeout(() => (snapshot = undefined), 500).unref());
    return snapshot;
  };
  const names = (counts: JobCounts[]) => [...new Set([...jobNames, ...counts.map((c) => c.name)])];

  new Gauge({
    name: 'queue_jobs',
    help: 'Jobs by queue (job name) and state: waiting (due), delayed (backoff or delay), active (running), failed (kept JOB_RETENTION_DAYS)',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
      const counts = await current();
      if (!counts) return;
      this.reset();
      for (const name of names(counts)) {
        const c = counts.find((entry) => entry.name === name);
        for (const state of ['waiting', 'delayed', 'active', 'failed'] as const) this.set({ queue: name, state }, c?.[state] ?? 0);
      }
    },
  });
  new Gauge({
    name: 'queue_oldest_waiting_seconds',
    help: 'Age of the oldest due job that has not started (0 when none waits)',
    labelNames: ['queue'] as const,
    registers,
    async collect() {
      const counts = await current();
      if (!counts) return;
      this.reset();
      for (const name of names(counts)) this.set({ queue: name }, counts.find((c) => c.name === name)?.oldestWaitingSeconds ?? 0);
    },
  });
  new Gauge({
    name: 'queue_workers_live',
    help: 'Worker processes (npm run worker, or the embedded process) whose heartbeat is recent',
    registers,
    async collect() {
      try {
        this.set(await options.liveWorkers());
      } catch (error) {
        log.warn({ err: error }, 'could not count live workers for /metrics');
      }
    },
  });

  const queueLabel = ['queue'] as const;
  return {
    completed: new Counter({ name: 'queue_jobs_completed_total', help: 'Job runs that succeeded', labelNames: queueLabel, registers }),
    failed: new Counter({ name: 'queue_jobs_failed_total', help: 'Jobs given up (retry budget spent or unrecoverable)', labelNames: queueLabel, registers }),
    retried: new Counter({ name: 'queue_jobs_retried_total', help: 'Failed runs scheduled for another attempt', labelNames: queueLabel, registers }),
    redriven: new Counter({
      name: 'queue_jobs_redriven_total',
      help: 'Jobs the reconciler delivered again: lease_expired (worker died or hung), delivery_lost (gone from the queue), undelivered (outbox)',
      labelNames: ['queue', 'reason'] as const,
      registers,
    }),
    duration: new Histogram({
      name: 'queue_job_duration_seconds',
      help: 'Duration of job runs by outcome',
      labelNames: ['queue', 'outcome'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    }),
  };
}

export type QueueMetrics = ReturnType<typeof createQueueMetrics>;
