import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { createWorkspaceBody, membershipOut, workspaceOut } from './workspaces.schemas.js';

const workspace = {
  id: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a',
  name: 'Acme Support',
  slug: 'acme-support',
  owner: 42,
  status: 'active',
  created_at: '2025-03-01T08:30:00.000Z',
  updated_at: '2025-03-12T17:05:41.000Z',
};

namedSchema(workspaceOut, 'Workspace', {
  description: 'A workspace: its members share chats, documents, knowledge bases, a plan and its credit.',
  example: workspace,
});
namedSchema(createWorkspaceBody, 'WorkspaceCreate', { description: 'A new workspace.', example: { name: 'Acme Support' } });
namedSchema(membershipOut, 'WorkspaceMembership', {
  description: "A person's membership of a workspace and their role (the owner's role is `admin`).",
  example: {
    id: '0198f2a1-0b1c-7d2e-8f3a-4b5c6d7e8f90',
    workspace: workspace.id,
    user: { id: 57, email: 'maria.lopez@example.com', name: 'Maria Lopez' },
    role: 'member',
    created_at: '2025-03-02T10:00:00.000Z',
  },
});

const member = { 403: ['not_workspace_member'] };
const ownerOrAdmin = { 403: ['not_workspace_member', 'permission_denied'] };

export const workspacesDocs: OperationDocs = {
  'GET /api/workspaces/': {
    operationId: 'workspaces_list',
    summary: 'List your workspaces',
    description: 'The workspaces the signed-in user belongs to (a workspace-restricted API key: only its workspace).',
  },
  'POST /api/workspaces/': {
    operationId: 'workspaces_create',
    summary: 'Create a workspace',
    description:
      'Any signed-in user; they become its owner (role `admin`) on the free plan. A workspace-restricted API key gets ' +
      '403 `api_key_workspace_denied`.',
  },
  'GET /api/workspaces/:id/': {
    operationId: 'workspaces_get',
    summary: 'Get a workspace',
    description: 'Members only; anyone else (and an unknown id) gets 403 `not_workspace_member`.',
    errors: member,
  },
  'PATCH /api/workspaces/:id/': {
    operationId: 'workspaces_update',
    summary: 'Rename, archive or restore a workspace',
    description:
      'The owner or an admin (403 `permission_denied`). `status: archived` makes the workspace read-only: every ' +
      'change in it is 409 `workspace_archived` until it is `active` again.',
    errors: ownerOrAdmin,
    requestExample: { name: 'Acme Customer Support' },
  },
  'PUT /api/workspaces/:id/': {
    operationId: 'workspaces_replace',
    summary: 'Replace a workspace\'s name and status',
    description: 'As PATCH, with `name` required. The owner or an admin (403 `permission_denied`).',
    errors: ownerOrAdmin,
    requestExample: { name: 'Acme Customer Support', status: 'active' },
  },
  'DELETE /api/workspaces/:id/': {
    operationId: 'workspaces_delete',
    summary: 'Delete a workspace',
    description: 'The owner only (403 `permission_denied`); deletes everything in it.',
    errors: ownerOrAdmin,
  },
  'POST /api/workspaces/:id/transfer-ownership/': {
    operationId: 'workspaces_transfer_ownership',
    summary: 'Make another member the owner',
    description:
      'The owner only (403 `permission_denied`). `user` must be another current member (400 `invalid_new_owner`); ' +
      'the previous owner stays an admin.',
    errors: { ...ownerOrAdmin, 400: ['invalid_new_owner'], 409: ['workspace_archived'] },
    requestExample: { user: 57 },
  },
  'POST /api/workspaces/:id/leave/': {
    operationId: 'workspaces_leave',
    summary: 'Leave a workspace',
    description: 'Any member but the owner (403 `owner_cannot_leave`: transfer ownership first).',
    errors: { 403: ['not_workspace_member', 'owner_cannot_leave'] },
  },
};

export const membershipsDocs: OperationDocs = {
  'GET /api/workspacememberships/': {
    operationId: 'workspace_memberships_list',
    summary: 'List memberships of your workspaces',
    description: 'Memberships of every workspace you belong to; `?workspace=` narrows to one (403 when not a member).',
    errors: member,
  },
  'GET /api/workspacememberships/mine/': {
    operationId: 'workspace_memberships_mine',
    summary: 'List your own memberships',
    description: 'The signed-in user\'s memberships, one per workspace.',
  },
  'GET /api/workspacememberships/:id/': {
    operationId: 'workspace_memberships_get',
    summary: 'Get a membership',
    description: 'Members of the same workspace; others get 404.',
  },
  'PUT /api/workspacememberships/:id/': {
    operationId: 'workspace_memberships_replace',
    summary: 'Change a member\'s role (PUT)',
    description: 'Same as PATCH.',
    errors: { 403: ['permission_denied', 'cannot_change_own_role', 'cannot_change_owner_role'], 409: ['workspace_archived'] },
    requestExample: { role: 'admin' },
  },
  'PATCH /api/workspacememberships/:id/': {
    operationId: 'workspace_memberships_update',
    summary: 'Change a member\'s role',
    description:
      'The owner or an admin (403 `permission_denied`); never your own role (403 `cannot_change_own_role`) nor the ' +
      "owner's (403 `cannot_change_owner_role`).",
    errors: { 403: ['permission_denied', 'cannot_change_own_role', 'cannot_change_owner_role'], 409: ['workspace_archived'] },
    requestExample: { role: 'admin' },
  },
  'DELETE /api/workspacememberships/:id/': {
    operationId: 'workspace_memberships_delete',
    summary: 'Remove a member',
    description: 'The owner or an admin (403 `permission_denied`); the owner cannot be removed (403 `cannot_remove_owner`).',
    errors: { 403: ['permission_denied', 'cannot_remove_owner'], 409: ['workspace_archived'] },
  },
};
