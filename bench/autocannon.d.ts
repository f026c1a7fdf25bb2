// autocannon 8 ships no type declarations; this covers the part of its programmatic API the
// benchmarks use (see node_modules/autocannon/README.md for the full option list).
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      title?: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      /** Concurrent connections (split between workers). */
      connections?: number;
      /** Seconds. */
      duration?: number;
      pipelining?: number;
      /** Seconds before a request counts as timed out. */
      timeout?: number;
      /** Worker threads generating the load; 0 runs the client on the calling thread. */
      workers?: number;
      /** A run before the measured one, whose figures are returned separately as `warmup`. */
      warmup?: { duration?: number; connections?: number };
      renderResultsTable?: boolean;
    }

    /** Percentile summary of one histogram; latencies are in milliseconds. */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p75: number;
      p90: number;
      p97_5: number;
      p99: number;
      p99_9: number;
    }

    interface Result {
      title?: string;
      url: string;
      connections: number;
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      resets: number;
      '2xx': number;
      statusCodeStats: Record<string, { count: number }>;
      latency: Histogram & { totalCount: number };
      /** Requests per second, sampled each second. */
      requests: Histogram & { sent: number };
      /** Bytes per second, sampled each second. */
      throughput: Histogram;
      warmup?: Result;
    }
  }

  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;
  export = autocannon;
}
