/**
 * The client side of bench/webhook.ts, in a child process of its own (`fork`), so that the server
 * measured (ours, the bare route, or a peer in its own process) has its process's main thread to
 * itself, as a deployed service does: sharing it with the client made our app's thread the
 * bottleneck at ~1,400 events/s while the peer, in its own process, had a thread of its own.
 *
 * Protocol (IPC):
 *   parent → child  load   {bodies}                          every event body, once (outside any timing)
 *   child → parent  loaded {}
 *   parent → child  run    {url, concurrency, signing, client}  sends the loaded bodies, each signed just
 *                                                             before it is sent, at most `concurrency`
 *                                                             in flight
 *   child → parent  ran    {latencies, statuses, seconds, cpuSeconds}
 *   child → parent  error  {message}
 * Nothing here talks to anything but the URLs it is given (127.0.0.1 in the benchmark).
 */
import Stripe from 'stripe';
import { request } from 'undici';

export interface Signing {
  secret: string;
  header: string;
}

export type ClientKind = 'undici' | 'fetch';

export type ParentMessage =
  | { type: 'load'; bodies: string[] }
  | { type: 'run'; url: string; concurrency: number; signing: Signing; client: ClientKind };

export type ChildMessage =
  | { type: 'loaded' }
  | { type: 'ran'; latencies: number[]; statuses: Record<number, number>; seconds: number; cpuSeconds: number }
  | { type: 'error'; message: string };

/** One signed POST; the response's status once its body is read. */
export async function post(client: ClientKind, url: string, body: string, signature: string, header: string): Promise<number> {
  const headers = { 'content-type': 'application/json', [header]: signature };
  if (client === 'fetch') {
    const response = await fetch(url, { method: 'POST', headers, body });
    await response.arrayBuffer();
    return response.status;
  }
  const response = await request(url, { method: 'POST', headers, body });
  await response.body.arrayBuffer();
  return response.statusCode;
}

/** Sends every body (signed at send time) with at most `concurrency` requests in flight. */
export async function sendAll(
  bodies: readonly string[],
  options: { url: string; concurrency: number; signing: Signing; client: ClientKind },
): Promise<{ latencies: number[]; statuses: Record<number, number>; seconds: number }> {
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let next = 0;
  const started = performance.now();
  async function worker() {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: options.signing.secret });
      const t0 = performance.now();
      const status = await post(options.client, options.url, body, signature, options.signing.header);
      latencies.push(performance.now() - t0);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  }
  await Promise.all(Array.from({ length: Math.min(options.concurrency, bodies.length) }, worker));
  return { latencies, statuses, seconds: (performance.now() - started) / 1000 };
}

const cpuNow = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

// Run as the forked child (bench/webhook.ts imports only the types and helpers above).
if (process.send && process.env.BENCH_WEBHOOK_CLIENT === '1') {
  let bodies: string[] = [];
  const reply = (message: ChildMessage) => process.send!(message);
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'load') {
      bodies = message.bodies;
      reply({ type: 'loaded' });
      return;
    }
    const cpuBefore = cpuNow();
    sendAll(bodies, message).then(
      (result) => reply({ type: 'ran', ...result, cpuSeconds: cpuNow() - cpuBefore }),
      (error: unknown) => reply({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
