import { randomFillSync } from 'node:crypto';
import { uuid } from 'drizzle-orm/pg-core';
import { v7 } from 'uuid';

/**
 * Random bytes for ids, drawn from a pool filled 4 KiB at a time: one call into the CSPRNG per
 * 256 ids instead of one per id (uuid's own source asks `crypto.getRandomValues` for 16 bytes
 * every time, a few percent of a webhook's CPU). Each id gets bytes no other id got.
 */
const POOL_BYTES = 16 * 256;
let pool = new Uint8Array(0);
let poolOffset = POOL_BYTES;
function sixteenRandomBytes(): Uint8Array {
  if (poolOffset === POOL_BYTES) {
    pool = randomFillSync(new Uint8Array(POOL_BYTES));
    poolOffset = 0;
  }
  poolOffset += 16;
  return pool.subarray(poolOffset - 16, poolOffset);
}

/** uuid's v7 state (its own is kept only when no options are given): last millisecond and counter. */
const clock = { msecs: -Infinity, seq: 0 };

/**
 * A new row id: a UUIDv7, ordered by creation time (monotonic within this process), so lists
 * ordered by `created_at, id` keep creation order even when timestamps tie (PGlite's clock has
 * millisecond resolution) and primary-key indexes stay append-mostly. Monotonic as uuid keeps it
 * (RFC 9562 method 1): a random 31-bit counter seeded each new millisecond, incremented within
 * one, and a millisecond borrowed from the future when it wraps.
 */
export const newId = (): string => {
  const random = sixteenRandomBytes();
  const now = Date.now();
  if (now > clock.msecs) {
    clock.msecs = now;
    clock.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    clock.seq = (clock.seq + 1) | 0;
    if (clock.seq === 0) clock.msecs++;
  }
  return v7({ random, msecs: clock.msecs, seq: clock.seq });
};

/** A UUID primary key the app fills with `newId()`; the database default covers rows inserted in SQL. */
export const uuidPrimaryKey = () => uuid('id').primaryKey().defaultRandom().$defaultFn(newId);
