import { hash } from '@node-rs/argon2';
import { randomToken, sha256Hex } from '../../src/platform/secrets.js';
import { invitations } from '../../src/modules/invitations/invitations.table.js';
import { teamMemberships, teams } from '../../src/modules/teams/teams.table.js';
import * as usersRepo from '../../src/modules/users/users.repo.js';
import { insertMembership } from '../../src/modules/workspaces/workspaces.repo.js';
import type { TestApp } from './app.js';

export const TEST_PASSWORD = 'correct-horse-battery';

let passwordHash: Promise<string> | undefined;
let sequence = 0;

export interface TestUser {
  id: number;
  email: string;
  name: string;
  token: string;
  password: string;
}

/**
 * A user with a known password and a ready API token (made directly; no argon2 per test). The
 * email is verified unless `verified: false` (a fresh sign-up that has not activated yet).
 */
export async function newUser(
  t: TestApp,
  overrides: { email?: string; name?: string; verified?: boolean } = {},
): Promise<TestUser> {
  sequence += 1;
  passwordHash ??= hash(TEST_PASSWORD);
  const email = overrides.email ?? `user${sequence}-${randomToken(4).toLowerCase()}@example.com`;
  const name = overrides.name ?? `User ${sequence}`;
  const db = t.deps.database.db;
  const user = await usersRepo.insertUser(db, {
    email,
    name,
    passwordHash: await passwordHash,
    emailVerifiedAt: overrides.verified === false ? null : new Date(),
  });
  if (!user) throw new Error(`user ${email} already exists`);
  const token = randomToken();
  await usersRepo.insertToken(db, user.id, sha256Hex(token), new Date(Date.now() + 3600_000));
  return { id: user.id, email: user.email, name: user.name, token, password: TEST_PASSWORD };
}

export interface TestWorkspace {
  id: string;
  slug: string;
  owner: TestUser;
}

/** A workspace created through the real service: the owner gets an admin membership. */
export async function newWorkspace(t: TestApp, owner: TestUser, name = 'Test Workspace'): Promise<TestWorkspace> {
  const workspace = await t.deps.services.workspaces.create(owner.id, name);
  return { id: workspace.id, slug: workspace.slug, owner };
}

/**
 * Adds a member directly. The API has no such endpoint (people join by invitation); tests that
 * are not about invitations use this shortcut.
 */
export async function addMember(
  t: TestApp,
  workspace: { id: string },
  user: TestUser,
  role: 'admin' | 'member' = 'member',
): Promise<string> {
  const row = await insertMembership(t.deps.database.db, { workspaceId: workspace.id, userId: user.id, role });
  return row!.id;
}

export interface TestTeam {
  id: string;
  workspaceId: string;
  name: string;
}

/** A team inserted directly, with no members (POST /api/teams/ would make its creator team admin). */
export async function newTeam(t: TestApp, workspace: { id: string }, name = `Team ${++sequence}`): Promise<TestTeam> {
  const [row] = await t.deps.database.db.insert(teams).values({ workspaceId: workspace.id, name }).returning();
  return { id: row!.id, workspaceId: row!.workspaceId, name: row!.name };
}

/** Adds a team member directly (the API only adds them by invitation); returns the membership id. */
export async function addTeamMember(
  t: TestApp,
  team: { id: string },
  user: { id: number },
  role: 'admin' | 'member' = 'member',
): Promise<string> {
  const [row] = await t.deps.database.db
    .insert(teamMemberships)
    .values({ teamId: team.id, userId: user.id, role })
    .returning();
  return row!.id;
}

/**
 * A pending invitation inserted directly (no mail); `expiresAt` in the past makes an expired one.
 * With `token`, the invitation carries that secret (as the mailed link does); without, it is like
 * an invitation made before tokens existed (only a verified matching account can answer it).
 */
export async function newInvitation(
  t: TestApp,
  values: {
    workspace: { id: string };
    email: string;
    team?: { id: string };
    role?: 'admin' | 'member';
    invitedBy?: { id: number };
    expiresAt?: Date;
    token?: string;
  },
): Promise<string> {
  const [row] = await t.deps.database.db
    .insert(invitations)
    .values({
      workspaceId: values.workspace.id,
      teamId: values.team?.id ?? null,
      email: values.email.toLowerCase(),
      role: values.role ?? 'member',
      invitedBy: values.invitedBy?.id ?? null,
      expiresAt: values.expiresAt ?? new Date(Date.now() + 24 * 3600_000),
      tokenHash: values.token === undefined ? null : sha256Hex(values.token),
    })
    .returning();
  return row!.id;
}
