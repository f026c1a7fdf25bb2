import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { teams } from '../teams/teams.table.js';
import { users } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { uuidPrimaryKey } from '../../db/columns.js';

export const invitationStatuses = ['pending', 'accepted', 'declined', 'revoked', 'expired'] as const;

export const invitations = pgTable(
  'invitations',
  {
    id: uuidPrimaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** Null for a workspace invitation. */
    teamId: uuid('team_id').references(() => teams.id, { onDelete: 'cascade' }),
    /** Stored lower-cased; matched against the accepting user's email. */
    email: text('email').notNull(),
    role: text('role', { enum: ['admin', 'member'] }).notNull(),
    status: text('status', { enum: invitationStatuses }).notNull().default('pending'),
    invitedBy: integer('invited_by').references(() => users.id, { onDelete: 'set null' }),
    /** SHA-256 of the secret in the invitation mail's link (proof of the mailbox); null for invitations made before tokens existed. */
    tokenHash: text('token_hash').unique(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    respondedAt: timestamp('responded_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('invitations_email_idx').on(t.email),
    index('invitations_workspace_idx').on(t.workspaceId),
    // At most one pending invitation per person and target (workspace, or team within it).
    uniqueIndex('invitations_pending_key')
      .on(t.workspaceId, sql`coalesce(${t.teamId}, '00000000-0000-0000-0000-000000000000'::uuid)`, t.email)
      .where(sql`${t.status} = 'pending'`),
    check('invitations_role_check', sql`${t.role} in ('admin', 'member')`),
    check(
      'invitations_status_check',
      sql`${t.status} in ('pending', 'accepted', 'declined', 'revoked', 'expired')`,
    ),
  ],
);
