import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createMemoryPubSub } from '../../platform/pubsub/memory.js';
import { ServiceUnavailableError } from '../../platform/errors.js';
import { createStreamControl } from './stream-control.js';

const log = pino({ level: 'silent' });

function untilAborted(signal: AbortSignal, timeoutMs = 5000): Promise<'aborted' | 'timeout'> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve('aborted');
    const timer = setTimeout(() => resolve('timeout'), timeoutMs);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve('aborted');
    });
  });
}

describe('stream control', () => {
  it('stops a running stream from another instance sharing the bus', async () => {
    const pubsub = createMemoryPubSub({ log });
    const generating = createStreamControl({ pubsub, log });
    const other = createStreamControl({ pubsub, log });
    await Promise.all([generating.listen(), other.listen()]);
    const outcome = generating.run('chat', 's1', (signal) => untilAborted(signal));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 's1');
    expect(await outcome).toBe('aborted');
  });

  it('applies a stop that arrived just before its stream started', async () => {
    const pubsub = createMemoryPubSub({ log });
    const generating = createStreamControl({ pubsub, log });
    const other = createStreamControl({ pubsub, log });
    await Promise.all([generating.listen(), other.listen()]);
    await other.stop('chat', 'early');
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The stop's delivery (queued with setImmediate) has happened: on a loaded machine the timer
    // above can fire first, and a delivery landing during the second run below would stop it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await generating.run('chat', 'early', (signal) => untilAborted(signal, 200))).toBe('aborted');
    // Used once: a later stream with the same id runs normally.
    expect(await generating.run('chat', 'early', (signal) => untilAborted(signal, 50))).toBe('timeout');
  });

  it('does not stop a stream of another chat with the same stream id', async () => {
    const pubsub = createMemoryPubSub({ log });
    const control = createStreamControl({ pubsub, log });
    await control.listen();
    const outcome = control.run('chat-a', 'same', (signal) => untilAborted(signal, 100));
    await control.stop('chat-b', 'same');
    expect(await outcome).toBe('timeout');
  });
});

describe('stream control when the pub/sub fails', () => {
  it('refuses a stop it cannot record with a 503, and still runs a stream whose retained check fails', async () => {
    const pubsub = createMemoryPubSub({ log });
    const control = createStreamControl({ pubsub, log });
    await control.listen();
    // A closed bus fails every call, as an unreachable Redis does.
    await pubsub.close();
    const stop = control.stop('chat', 'lost');
    await expect(stop).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(stop).rejects.toMatchObject({ status: 503, code: 'service_unavailable', headers: { 'Retry-After': expect.any(String) } });
    expect(await control.run('chat', 'lost', (signal) => untilAborted(signal, 50))).toBe('timeout');
  });

  it('a stop honoured by a running stream clears the retained stop, so the stream id can be reused', async () => {
    const pubsub = createMemoryPubSub({ log });
    const generating = createStreamControl({ pubsub, log });
    const other = createStreamControl({ pubsub, log });
    await Promise.all([generating.listen(), other.listen()]);
    const outcome = generating.run('chat', 'reused', (signal) => untilAborted(signal));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 'reused');
    expect(await outcome).toBe('aborted');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await pubsub.retained('chat-stream-stop', 'chat:reused')).toBeUndefined();
    expect(await generating.run('chat', 'reused', (signal) => untilAborted(signal, 50))).toBe('timeout');
  });
});
