import { type MatrixRow, statuses, type World } from './world.js';
import { TEST_PASSWORD } from '../support/factories.js';
import { replaceEmailToken } from '../../src/modules/users/users.repo.js';
import { randomToken, sha256Hex } from '../../src/platform/secrets.js';

let n = 0;
const freshEmail = () => `matrix-${Date.now()}-${++n}@example.com`;

/** A live mailed secret for member2 (as the activation or email-change mail would carry). */
async function mailedSecret(w: World, purpose: 'activation' | 'email_change', newEmail?: string) {
  const token = randomToken();
  await replaceEmailToken(w.t.deps.database.db, {
    userId: w.member2.id,
    purpose,
    ...(newEmail ? { newEmail } : {}),
    tokenHash: sha256Hex(token),
    expiresAt: new Date(Date.now() + 3600_000),
  });
  return { uid: String(w.member2.id), token };
}

/** Accounts, users, workspaces and memberships. */
export const coreRows: MatrixRow[] = [
  // --- accounts (/auth/) ---
  {
    route: 'POST /auth/users/',
    request: () => ({ url: '/auth/users/', body: { email: freshEmail(), password: 'long-enough-pw' } }),
    expect: statuses(201, 201, 201, 201, 201),
  },
  {
    route: 'POST /auth/token/login/',
    request: (w) => ({ url: '/auth/token/login/', body: { email: w.users.member.email, password: TEST_PASSWORD } }),
    expect: statuses(200, 200, 200, 200, 200),
  },
  { route: 'POST /auth/token/logout/', request: () => ({ url: '/auth/token/logout/' }), expect: statuses(204, 204, 204, 204, 403) },
  { route: 'GET /auth/users/me/', request: () => ({ url: '/auth/users/me/' }), expect: statuses(200, 200, 200, 200, 403) },
  {
    route: 'PATCH /auth/users/me/',
    request: () => ({ url: '/auth/users/me/', body: { name: 'Renamed' } }),
    expect: statuses(200, 200, 200, 200, 403),
  },
  {
    route: 'PUT /auth/users/me/',
    request: () => ({ url: '/auth/users/me/', body: { name: 'Renamed' } }),
    expect: statuses(200, 200, 200, 200, 403),
  },
  {
    route: 'DELETE /auth/users/me/',
    request: () => ({ url: '/auth/users/me/', body: { current_password: TEST_PASSWORD } }),
    // The owner and the outsider own workspaces: 409 until they hand them over.
    expect: statuses(409, 204, 204, 409, 403),
  },
  {
    route: 'POST /auth/users/set_password/',
    request: () => ({
      url: '/auth/users/set_password/',
      body: { current_password: TEST_PASSWORD, new_password: 'another-long-secret' },
    }),
    expect: statuses(204, 204, 204, 204, 403),
  },
  {
    route: 'POST /auth/users/reset_password/',
    request: (w) => ({ url: '/auth/users/reset_password/', body: { email: w.users.member.email } }),
    expect: statuses(204, 204, 204, 204, 204),
  },
  {
    route: 'POST /auth/users/reset_password_confirm/',
    request: (w) => ({
      url: '/auth/users/reset_password_confirm/',
      body: { uid: String(w.users.member.id), token: 'not-a-real-token', new_password: 'another-long-secret' },
    }),
    expect: statuses(400, 400, 400, 400, 400),
  },
  {
    route: 'POST /auth/users/activation/',
    label: 'a live activation secret (no credentials needed)',
    request: async (w) => ({ url: '/auth/users/activation/', body: await mailedSecret(w, 'activation') }),
    expect: statuses(204, 204, 204, 204, 204),
  },
  {
    route: 'POST /auth/users/activation/',
    label: 'a wrong secret',
    request: (w) => ({ url: '/auth/users/activation/', body: { uid: String(w.member2.id), token: 'not-a-real-token' } }),
    expect: statuses(400, 400, 400, 400, 400),
  },
  {
    route: 'POST /auth/users/resend_activation/',
    request: () => ({ url: '/auth/users/resend_activation/', body: { email: freshEmail() } }),
    expect: statuses(204, 204, 204, 204, 204),
  },

  {
    route: 'POST /auth/users/set_email/',
    request: () => ({ url: '/auth/users/set_email/', body: { current_password: TEST_PASSWORD, new_email: freshEmail() } }),
    expect: statuses(204, 204, 204, 204, 403),
  },
  {
    route: 'POST /auth/users/set_email/confirm/',
    label: 'a live email-change secret (no credentials needed)',
    request: async (w) => ({ url: '/auth/users/set_email/confirm/', body: await mailedSecret(w, 'email_change', freshEmail()) }),
    expect: statuses(204, 204, 204, 204, 204),
  },
  {
    route: 'POST /auth/users/set_email/confirm/',
    label: 'a wrong secret',
    request: (w) => ({ url: '/auth/users/set_email/confirm/', body: { uid: String(w.member2.id), token: 'not-a-real-token' } }),
    expect: statuses(400, 400, 400, 400, 400),
  },

  // --- personal API keys (/auth/api-keys/) ---
  {
    route: 'POST /auth/api-keys/',
    request: () => ({ url: '/auth/api-keys/', body: { name: 'Integration' } }),
    expect: statuses(201, 201, 201, 201, 403),
  },
  {
    route: 'POST /auth/api-keys/',
    label: 'restricted to the matrix workspace',
    request: (w) => ({ url: '/auth/api-keys/', body: { name: 'Integration', workspace: w.workspace.id, read_only: true } }),
    // Only members may restrict a key to a workspace; anyone else's request is invalid input.
    expect: statuses(201, 201, 201, 400, 403),
  },
  { route: 'GET /auth/api-keys/', request: () => ({ url: '/auth/api-keys/' }), expect: statuses(200, 200, 200, 200, 403) },
  {
    route: 'DELETE /auth/api-keys/:id/',
    label: "the plain member's key",
    request: async (w) => {
      const { member } = w.users;
      const key = await w.t.deps.services.apiKeys.create({ ...member, tokenId: 'matrix' }, { name: 'Member key', read_only: false });
      return { url: `/auth/api-keys/${key.id}/` };
    },
    expect: statuses(404, 404, 204, 404, 403),
  },

  // --- users ---
  { route: 'GET /api/users/me/', request: () => ({ url: '/api/users/me/' }), expect: statuses(200, 200, 200, 200, 403) },
  {
    route: 'PATCH /api/users/:id/',
    label: "the member's own id",
    request: (w) => ({ url: `/api/users/${w.users.member.id}/`, body: { name: 'Mine' } }),
    expect: statuses(403, 403, 200, 403, 403),
  },

  // --- workspaces ---
  { route: 'GET /api/workspaces/', request: () => ({ url: '/api/workspaces/' }), expect: statuses(200, 200, 200, 200, 403) },
  {
    route: 'POST /api/workspaces/',
    request: () => ({ url: '/api/workspaces/', body: { name: 'Another' } }),
    expect: statuses(201, 201, 201, 201, 403),
  },
  {
    route: 'GET /api/workspaces/:id/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/` }),
    expect: statuses(200, 200, 200, 403, 403),
  },
  {
    route: 'PATCH /api/workspaces/:id/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/`, body: { name: 'Renamed' } }),
    expect: statuses(200, 200, 403, 403, 403),
  },
  {
    route: 'PUT /api/workspaces/:id/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/`, body: { name: 'Renamed' } }),
    expect: statuses(200, 200, 403, 403, 403),
  },
  {
    route: 'DELETE /api/workspaces/:id/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/` }),
    expect: statuses(204, 403, 403, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:id/transfer-ownership/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/transfer-ownership/`, body: { user: w.member2.id } }),
    expect: statuses(200, 403, 403, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:id/leave/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/leave/` }),
    expect: statuses(403, 204, 204, 403, 403),
  },

  // --- workspace memberships ---
  {
    route: 'GET /api/workspacememberships/',
    request: () => ({ url: '/api/workspacememberships/' }),
    expect: statuses(200, 200, 200, 200, 403),
  },
  {
    route: 'GET /api/workspacememberships/mine/',
    request: () => ({ url: '/api/workspacememberships/mine/' }),
    expect: statuses(200, 200, 200, 200, 403),
  },
  {
    route: 'GET /api/workspacememberships/:id/',
    request: (w) => ({ url: `/api/workspacememberships/${w.memberships.member2}/` }),
    expect: statuses(200, 200, 200, 404, 403),
  },
  {
    route: 'PUT /api/workspacememberships/:id/',
    request: (w) => ({ url: `/api/workspacememberships/${w.memberships.member2}/`, body: { role: 'admin' } }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'PATCH /api/workspacememberships/:id/',
    request: (w) => ({ url: `/api/workspacememberships/${w.memberships.member2}/`, body: { role: 'admin' } }),
    expect: statuses(200, 200, 403, 404, 403),
  },
  {
    route: 'DELETE /api/workspacememberships/:id/',
    request: (w) => ({ url: `/api/workspacememberships/${w.memberships.member2}/` }),
    expect: statuses(204, 204, 403, 404, 403),
  },
];
