import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { users } from '../users/users.table.js';
import { workspaces } from '../workspaces/workspaces.table.js';
import { uuidPrimaryKey } from '../../db/columns.js';

export const teams = pgTable(
  'teams',
  {
    id: uuidPrimaryKey(),
    workspaceId: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    createdBy: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [unique('teams_workspace_name_key').on(t.workspaceId, t.name)],
);

export const teamMemberships = pgTable(
  'team_memberships',
  {
    id: uuidPrimaryKey(),
    teamId: uuid('team_id')
      .notNull()
      .references(() => teams.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ['admin', 'member'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique('team_memberships_team_user_key').on(t.teamId, t.userId),
    index('team_memberships_user_idx').on(t.userId),
    check('team_memberships_role_check', sql`${t.role} in ('admin', 'member')`),
  ],
);
