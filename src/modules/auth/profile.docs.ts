import type { OperationDocs } from '../../platform/openapi.js';
import { namedSchema } from '../../platform/openapi.js';
import { meOut } from './profile.schemas.js';

namedSchema(meOut, 'Me', {
  description: 'The signed-in user with the workspaces they belong to and their role in each.',
  example: {
    id: 42,
    email: 'ana.silva@example.com',
    name: 'Ana Silva',
    email_verified: true,
    workspaces: [
      { id: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a', name: 'Acme Support', slug: 'acme-support', role: 'admin', is_owner: true },
    ],
  },
});

export const usersDocs: OperationDocs = {
  'GET /api/users/me/': {
    operationId: 'users_me',
    summary: 'Get yourself and your workspaces',
    description: 'The signed-in user (session token or API key; a workspace-restricted key shows only its workspace).',
  },
  'PATCH /api/users/:id/': {
    operationId: 'users_update',
    summary: 'Change your display name',
    description: 'Only your own user (403 `permission_denied` for anyone else\'s id); only `name` is changed.',
    errors: { 403: ['permission_denied'] },
    requestExample: { name: 'Ana M. Silva' },
  },
};
