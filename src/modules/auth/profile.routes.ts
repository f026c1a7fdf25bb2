import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { currentUser } from '../../platform/auth.js';
import { meOut, updateUserBody, userIdParams } from './profile.schemas.js';
import { userOut } from '../users/index.js';
import type { UsersService } from './profile.service.js';

const tags = ['users'];

export const usersRoutes: FastifyPluginAsyncZod<{ users: UsersService }> = async (app, { users }) => {
  app.get('/api/users/me/', { schema: { tags, response: { 200: meOut } } }, async (request) =>
    users.me(currentUser(request)),
  );

  app.patch(
    '/api/users/:id/',
    { schema: { tags, params: userIdParams, body: updateUserBody, response: { 200: userOut } } },
    async (request) => users.updateName(currentUser(request).id, request.params.id, request.body.name),
  );
};
