#!/usr/bin/env node
// The container's HEALTHCHECK (slim images have no curl): exits 0 when GET /healthz answers 200.
//   node scripts/healthcheck.mjs          the API: http://127.0.0.1:$PORT/healthz (PORT defaults to 8000)
//   node scripts/healthcheck.mjs 9464     another port, such as a worker's WORKER_METRICS_PORT
const port = process.argv[2] ?? process.env.PORT ?? '8000';
try {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(4000) });
  process.exit(response.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
