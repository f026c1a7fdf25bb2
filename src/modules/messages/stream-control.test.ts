import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createMemoryPubSub } from '../../platform/pubsub/memory.js';
import type { PubSub } from '../../platform/pubsub/port.js';
import { ServiceUnavailableError } from '../../platform/errors.js';
import { createStreamControl, type StreamControl } from './stream-control.js';

const log = pino({ level: 'silent' });

/** One stream control per pub/sub given (a process each), every one listening. */
async function listening<const Buses extends readonly PubSub[]>(...pubsubs: Buses): Promise<{ [K in keyof Buses]: StreamControl }> {
  const controls = pubsubs.map((pubsub) => createStreamControl({ pubsub, log }));
  await Promise.all(controls.map((control) => control.listen()));
  return controls as { [K in keyof Buses]: StreamControl };
}

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
    const [generating, other] = await listening(pubsub, pubsub);
    const outcome = generating.run('chat', 's1', (signal) => untilAborted(signal));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 's1');
    expect(await outcome).toBe('aborted');
  });

  it('applies a stop that arrived just before its stream started', async () => {
    const pubsub = createMemoryPubSub({ log });
    const [generating, other] = await listening(pubsub, pubsub);
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
    const [generating, other] = await listening(slow, bus);
    await other.stop('chat', 'late');
    await vi.waitFor(() => expect(held).toHaveLength(1));
    expect(await generating.run('chat', 'late', (signal) => untilAborted(signal, 200))).toBe('aborted');
    const second = generating.run('chat', 'late', (signal) => untilAborted(signal, 100));
    await vi.waitFor(() => expect(generating.isActive('chat', 'late')).toBe(true));
    held.splice(0).forEach((deliver) => deliver());
    expect(await second).toBe('timeout');
    // A new stop for the reused id still stops it (here through its published copy).
    const third = generating.run('chat', 'late', (signal) => untilAborted(signal, 5000));
    await vi.waitFor(() => expect(generating.isActive('chat', 'late')).toBe(true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 'late');
    await vi.waitFor(() => expect(held).toHaveLength(1));
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
    const [generating, next, other] = await listening(slowClear, bus, bus);
    let ended = false;
    const first = generating.run('chat', 'slow-clear', (signal) => untilAborted(signal)).finally(() => (ended = true));
    await vi.waitFor(() => expect(generating.isActive('chat', 'slow-clear')).toBe(true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 'slow-clear');
    await vi.waitFor(() => expect(clears).toHaveLength(1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(ended).toBe(false);
    clears.splice(0).forEach((clear) => clear());
    expect(await first).toBe('aborted');
    expect(await next.run('chat', 'slow-clear', (signal) => untilAborted(signal, 100))).toBe('timeout');
  });

  it('a clear that hangs holds a stop back for half a second, then the stream ends anyway', async () => {
    const bus = createMemoryPubSub({ log });
    const hangingClear: PubSub = { ...bus, clearRetained: () => new Promise<void>(() => undefined) };
    const [generating, other] = await listening(hangingClear, bus);
    const outcome = generating.run('chat', 'hung', (signal) => untilAborted(signal, 5000));
    await new Promise((resolve) => setTimeout(resolve, 10));
    const stoppedAt = performance.now();
    await other.stop('chat', 'hung');
    expect(await outcome).toBe('aborted');
    const waited = performance.now() - stoppedAt;
    expect(waited).toBeGreaterThanOrEqual(450);
    expect(waited).toBeLessThan(3000);
  });

  it('clears a retained stop found by a stream that another stop ended meanwhile, so the id can be reused', async () => {
    const bus = createMemoryPubSub({ log });
    // The stream's first retained check is answered only when released.
    const checks: (() => void)[] = [];
    let hold = true;
    const slowCheck: PubSub = {
      ...bus,
      retained: (channel, key) => {
        if (!hold) return bus.retained(channel, key);
        hold = false;
        return new Promise((resolve) => checks.push(() => void bus.retained(channel, key).then(resolve)));
      },
    };
    const [generating, other] = await listening(slowCheck, bus);
    // Retained, and delivered here before the stream registers (queued first, so it runs first).
    await other.stop('chat', 'twice-stopped');
    await new Promise((resolve) => setImmediate(resolve));
    const first = generating.run('chat', 'twice-stopped', (signal) => untilAborted(signal, 2000));
    await vi.waitFor(() => expect(checks).toHaveLength(1));
    // A second stop (a retry) lands where the stream is registered: it ends it there.
    await generating.stop('chat', 'twice-stopped');
    checks.splice(0).forEach((check) => check());
    expect(await first).toBe('aborted');
    expect(await bus.retained('chat-stream-stop', 'chat:twice-stopped')).toBeUndefined();
    expect(await generating.run('chat', 'twice-stopped', (signal) => untilAborted(signal, 50))).toBe('timeout');
  });

  it('a stop received by a process running the stream also ends the same id running in another process', async () => {
    const pubsub = createMemoryPubSub({ log });
    const [here, there] = await listening(pubsub, pubsub);
    const local = here.run('chat', 'twice', (signal) => untilAborted(signal, 2000));
    const remote = there.run('chat', 'twice', (signal) => untilAborted(signal, 2000));
    await vi.waitFor(() => expect(here.isActive('chat', 'twice') && there.isActive('chat', 'twice')).toBe(true));
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
    const [control] = await listening(pubsub);
    const outcome = control.run('chat-a', 'same', (signal) => untilAborted(signal, 100));
    await control.stop('chat-b', 'same');
    expect(await outcome).toBe('timeout');
  });
});

describe('stream control when the pub/sub fails', () => {
  it('refuses a stop it cannot record with a 503, and still runs a stream whose retained check fails', async () => {
    const pubsub = createMemoryPubSub({ log });
    const [control] = await listening(pubsub);
    // A closed bus fails every call, as an unreachable Redis does.
    await pubsub.close();
    const stop = control.stop('chat', 'lost');
    await expect(stop).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(stop).rejects.toMatchObject({ status: 503, code: 'service_unavailable', headers: { 'Retry-After': expect.any(String) } });
    expect(await control.run('chat', 'lost', (signal) => untilAborted(signal, 50))).toBe('timeout');
  });

  it('ends a stream running here at once when the pub/sub is down, and answers the stop (it needs nothing recorded)', async () => {
    const pubsub = createMemoryPubSub({ log });
    const [control] = await listening(pubsub);
    const outcome = control.run('chat', 'local', (signal) => untilAborted(signal, 2000));
    await vi.waitFor(() => expect(control.isActive('chat', 'local')).toBe(true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await pubsub.close();
    await expect(control.stop('chat', 'local')).resolves.toBeUndefined();
    expect(await outcome).toBe('aborted');
  });

  it('a stop honoured by a running stream clears the retained stop, so the stream id can be reused', async () => {
    const pubsub = createMemoryPubSub({ log });
    const [generating, other] = await listening(pubsub, pubsub);
    const outcome = generating.run('chat', 'reused', (signal) => untilAborted(signal));
    await new Promise((resolve) => setTimeout(resolve, 10));
    await other.stop('chat', 'reused');
    expect(await outcome).toBe('aborted');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await pubsub.retained('chat-stream-stop', 'chat:reused')).toBeUndefined();
    expect(await generating.run('chat', 'reused', (signal) => untilAborted(signal, 50))).toBe('timeout');
  });
});
