import { teamMemberships, teams } from '../../src/modules/teams/teams.table.js';
import { randomToken } from '../../src/platform/secrets.js';
import type { TestApp } from '../support/app.js';
import {
  addMember,
  addTeamMember,
  newInvitation,
  newTeam,
  newUser,
  newWorkspace,
  type TestUser,
  type TestWorkspace,
} from '../support/factories.js';

/** The callers every route is tried as. */
export const roles = ['owner', 'admin', 'member', 'outsider', 'anonymous'] as const;
export type Role = (typeof roles)[number];

/**
 * A fresh workspace with one user per role (the outsider owns a workspace of their own) and a
 * few objects routes can point at. Built anew for every (route, role) pair, so destructive
 * requests never affect one another.
 */
export interface World {
  t: TestApp;
  workspace: TestWorkspace;
  otherWorkspace: TestWorkspace;
  users: Record<Exclude<Role, 'anonymous'>, TestUser>;
  /** A second plain member, the target of membership changes. */
  member2: TestUser;
  memberships: { owner: string; admin: string; member: string; member2: string };
  team: { id: string };
  /** member2's membership of `team`. */
  teamMemberships: { member2: string };
  /** A second team, led by the plain member (team admin), with member2 in it: team-admin rights. */
  memberTeam: { id: string; memberships: { member: string; member2: string } };
  /** Pending invitations: the outsider to the workspace, the plain member to `team`. */
  invitations: { outsider: string; memberToTeam: string };
  /** The mailed secret of the outsider's invitation. */
  invitationTokens: { outsider: string };
}

export async function buildWorld(t: TestApp): Promise<World> {
  const [owner, admin, member, member2, outsider] = await Promise.all([
    newUser(t),
    newUser(t),
    newUser(t),
    newUser(t),
    newUser(t),
  ]);
  const workspace = await newWorkspace(t, owner!, 'Matrix');
  const otherWorkspace = await newWorkspace(t, outsider!, 'Elsewhere');
  const memberships = {
    owner: (await t.deps.services.memberships.mine(owner!.id)).find((m) => m.workspace === workspace.id)!.id,
    admin: await addMember(t, workspace, admin!, 'admin'),
    member: await addMember(t, workspace, member!, 'member'),
    member2: await addMember(t, workspace, member2!, 'member'),
  };
  const db = t.deps.database.db;
  const [team] = await db.insert(teams).values({ workspaceId: workspace.id, name: 'Core', createdBy: owner!.id }).returning();
  const [coreMember2] = await db
    .insert(teamMemberships)
    .values({ teamId: team!.id, userId: member2!.id, role: 'member' })
    .returning();
  const memberTeam = await newTeam(t, workspace, 'Member-led');
  const memberTeamMemberships = {
    member: await addTeamMember(t, memberTeam, member!, 'admin'),
    member2: await addTeamMember(t, memberTeam, member2!, 'member'),
  };
  const invitationTokens = { outsider: randomToken() };
  const invitations = {
    outsider: await newInvitation(t, { workspace, email: outsider!.email, invitedBy: owner!, token: invitationTokens.outsider }),
    memberToTeam: await newInvitation(t, { workspace, team: team!, email: member!.email, invitedBy: owner! }),
  };
  return {
    t,
    workspace,
    otherWorkspace,
    users: { owner: owner!, admin: admin!, member: member!, outsider: outsider! },
    member2: member2!,
    memberships,
    team: { id: team!.id },
    teamMemberships: { member2: coreMember2!.id },
    memberTeam: { id: memberTeam.id, memberships: memberTeamMemberships },
    invitations,
    invitationTokens,
  };
}

export interface MatrixRequest {
  url: string;
  /** JSON body, or the raw payload (a Buffer) when `headers` set its content type. */
  body?: unknown;
  /** Extra request headers, such as the content type of a multipart body. */
  headers?: Record<string, string>;
}

/**
 * One row of the role matrix: a registered route (`METHOD /pattern/` exactly as Fastify has it),
 * how to call it in a world, and the status each role must get.
 */
export interface MatrixRow {
  route: string;
  /** Tells rows for the same route apart (for example, several bodies). */
  label?: string;
  request(world: World, role: Role): MatrixRequest | Promise<MatrixRequest>;
  expect: Record<Role, number>;
}

/** Shorthand for the `expect` record, in the order owner, admin, member, outsider, anonymous. */
export function statuses(owner: number, admin: number, member: number, outsider: number, anonymous: number) {
  return { owner, admin, member, outsider, anonymous };
}
