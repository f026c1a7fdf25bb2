import { describe, expect, it } from 'vitest';
import { validate, version } from 'uuid';
import { newId } from './columns.js';

describe('newId', () => {
  it('gives valid, distinct UUIDv7s in creation order, across many pool refills', () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    for (const id of ids) {
      expect(validate(id)).toBe(true);
      expect(version(id)).toBe(7);
    }
    expect(new Set(ids).size).toBe(ids.length);
    // Monotonic within the process: the next id sorts after the previous one, even in one millisecond.
    expect([...ids].sort()).toEqual(ids);
  });

  it('carries the current time in its first 48 bits', () => {
    const before = Date.now();
    const id = newId();
    const msecs = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    // Within a millisecond-borrowing margin of the clock.
    expect(msecs).toBeGreaterThanOrEqual(before);
    expect(msecs).toBeLessThanOrEqual(Date.now() + 5);
  });

  it('draws fresh random bits for every id (the tail differs even between consecutive ids)', () => {
    const tails = new Set(Array.from({ length: 1000 }, () => newId().slice(-12)));
    expect(tails.size).toBe(1000);
  });
});
