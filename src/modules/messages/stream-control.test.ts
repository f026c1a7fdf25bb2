import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createMemoryPubSub } from '../../platform/pubsub/memory.js';
import type { PubSub } from '../../platform/pubsub/port.js';
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
    expect(await generating.run('chat', 'early', (signal) => untilAborted(signal, 200))).toBe('aborted');
    // Used once: a later stream with the same id runs normally.
    expect(await generating.run('chat', 'early', (signal) => untilAborted(signal, 50))).toBe('timeout');
  });

  it('a stop delivered late, after its stream honoured the retained copy, does not stop a later stream with the same id', async () => {
    const bus = createMemoryPubSub({ log });
    // This process's deliveries are held until released, as a slow subscriber connection holds them.
    const held: (() => void)[] = [];
    const slow: PubSub = { ...bus, subscribe: (channel, handler) => bus.subscribe(channel, (message) => void held.push(() => handler(message))) };
    const generating = createStreamControl({ pubsub: slow, log });
    const other = createStreamControl({ pubsub: bus, log });
    await Promise.all([generating.listen(), other.listen()]);
    await other.stop('chat', 'late');
    expect(await generating.run('chat', 'late', (signal) => untilAborted(signal, 200))).toBe('aborted');
    const second = generating.run('chat', 'late', (signal) => untilAborted(signal, 100));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(held).toHaveLength(1);
    held.splice(0).forEach((deliver) => deliver());
    expect(await second).toBe('timeout');
    // A new stop for the reused id still stops it.
    const third = generating.run('chat', 'late', (signal) => untilAborted(signal, 2000));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 'late');
    await new Promise((resolve) => setTimeout(resolve, 10));
    held.splice(0).forEach((deliver) => deliver());
    expect(await third).toBe('aborted');
  });

  it("ends a stopped stream only once the stop's retained copy is cleared, so a stream reusing the id in another process then runs", async () => {
    const bus = createMemoryPubSub({ log });
    // The clear lands only when released, as a slow Redis round trip does.
    const clears: (() => void)[] = [];
    const slowClear: PubSub = {
      ...bus,
      clearRetained: (channel, key) => new Promise<void>((resolve) => clears.push(() => void bus.clearRetained(channel, key).then(resolve))),
    };
    const generating = createStreamControl({ pubsub: slowClear, log });
    const next = createStreamControl({ pubsub: bus, log });
    const other = createStreamControl({ pubsub: bus, log });
    await Promise.all([generating.listen(), next.listen(), other.listen()]);
    let ended = false;
    const first = generating.run('chat', 'slow-clear', (signal) => untilAborted(signal)).finally(() => (ended = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 'slow-clear');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ended).toBe(false);
    expect(clears).toHaveLength(1);
    clears.splice(0).forEach((clear) => clear());
    expect(await first).toBe('aborted');
    expect(await next.run('chat', 'slow-clear', (signal) => untilAborted(signal, 100))).toBe('timeout');
  });

  it('a clear that hangs delays a stop by at most half a second', async () => {
    const bus = createMemoryPubSub({ log });
    const hangingClear: PubSub = { ...bus, clearRetained: () => new Promise<void>(() => undefined) };
    const generating = createStreamControl({ pubsub: hangingClear, log });
    const other = createStreamControl({ pubsub: bus, log });
    await Promise.all([generating.listen(), other.listen()]);
    const outcome = generating.run('chat', 'hung', (signal) => untilAborted(signal, 3000));
    await new Promise((resolve) => setTimeout(resolve, 10));
    const stoppedAt = Date.now();
    await other.stop('chat', 'hung');
    expect(await outcome).toBe('aborted');
    expect(Date.now() - stoppedAt).toBeLessThan(1500);
  });

  it('a stop received by a process running the stream also ends the same id running in another process', async () => {
    const pubsub = createMemoryPubSub({ log });
    const here = createStreamControl({ pubsub, log });
    const there = createStreamControl({ pubsub, log });
    await Promise.all([here.listen(), there.listen()]);
    const local = here.run('chat', 'twice', (signal) => untilAborted(signal, 2000));
    const remote = there.run('chat', 'twice', (signal) => untilAborted(signal, 2000));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await here.stop('chat', 'twice');
    expect(await local).toBe('aborted');
    expect(await remote).toBe('aborted');
    // Not retained: the stop had streams to end, so a later stream with the id runs.
    expect(await pubsub.retained('chat-stream-stop', 'chat:twice')).toBeUndefined();
    expect(await there.run('chat', 'twice', (signal) => untilAborted(signal, 50))).toBe('timeout');
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
