import { z } from 'zod';
import { pageQuery, paginated } from '../../../platform/pagination.js';

export const usageGroups = ['user', 'model', 'kind', 'day'] as const;
export type UsageGroup = (typeof usageGroups)[number];

/** A UTC calendar day (`2026-11-01`) or an instant with its offset (`2026-11-01T12:00:00Z`). */
const dateOrInstant = z.union([z.iso.date(), z.iso.datetime({ offset: true })]);

export const usageQuery = pageQuery.extend({
  group_by: z.enum(usageGroups).default('day'),
  /** Inclusive; default: 30 days before `to`. */
  from: dateOrInstant.optional(),
  /** Exclusive for an instant; a day counts in full. Default: now. */
  to: dateOrInstant.optional(),
  format: z.enum(['json', 'csv']).default('json'),
});
export type UsageQuery = z.output<typeof usageQuery>;

export const usageRow = z.object({
  /** The group: a user id (`0`: no user), a model id, a kind, or a UTC day. */
  key: z.string(),
  /** With `group_by=user`: who it is (null for no user or a deleted one). */
  user: z.object({ id: z.number().int(), email: z.string(), name: z.string() }).nullable().optional(),
  calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  /** USD, like the credit fields. */
  cost: z.number(),
});
export type UsageRowOut = z.output<typeof usageRow>;

export const usageOut = paginated(usageRow).extend({
  group_by: z.enum(usageGroups),
  from: z.iso.datetime({ offset: true }),
  to: z.iso.datetime({ offset: true }),
});
