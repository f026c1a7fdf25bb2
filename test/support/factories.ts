import { hash } from '@node-rs/argon2';
import { randomToken, sha256Hex } from '../../src/platform/secrets.js';
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

/** A user with a known password and a ready API token (made directly; no argon2 per test). */
export async function newUser(t: TestApp, overrides: { email?: string; name?: string } = {}): Promise<TestUser> {
  sequence += 1;
  passwordHash ??= hash(TEST_PASSWORD);
  const email = overrides.email ?? `user${sequence}-${randomToken(4).toLowerCase()}@example.com`;
  const name = overrides.name ?? `User ${sequence}`;
  const db = t.deps.database.db;
  const user = await usersRepo.insertUser(db, { email, name, passwordHash: await passwordHash });
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
