import { uuid } from 'drizzle-orm/pg-core';
import { v7 } from 'uuid';

/**
 * A new row id: a UUIDv7, ordered by creation time (monotonic within this process), so lists
 * ordered by `created_at, id` keep creation order even when timestamps tie (PGlite's clock has
 * millisecond resolution) and primary-key indexes stay append-mostly.
 */
export const newId = (): string => v7();

/** A UUID primary key the app fills with `newId()`; the database default covers rows inserted in SQL. */
export const uuidPrimaryKey = () => uuid('id').primaryKey().defaultRandom().$defaultFn(newId);
