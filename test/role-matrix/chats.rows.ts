import { type MatrixRow, statuses, type World } from './world.js';

/** A private chat owned by the plain member and shared with member2; optionally public. */
async function memberChat(w: World, options: { isPublic?: boolean } = {}) {
  const chats = w.t.deps.services.chats;
  const chat = await chats.create(w.users.member.id, w.workspace.id, {
    name: 'Matrix chat',
    system_prompt: '',
    agent_framework: 'tools',
    model_parameters: {},
  });
  await chats.share(w.users.member.id, w.workspace.id, chat.id, w.member2.email);
  if (options.isPublic) await chats.togglePublic(w.users.member.id, w.workspace.id, chat.id);
  return { ...chat, base: `/api/workspaces/${w.workspace.id}/chats/${chat.id}/` };
}

// For the member's private chat: the owner and admins of the workspace cannot even see it (404).
const memberOnly = statuses(404, 404, 200, 403, 403);

export const chatsRows: MatrixRow[] = [
  {
    route: 'GET /api/workspaces/:ws/chats/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/chats/` }),
    expect: statuses(200, 200, 200, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/chats/`, body: { name: 'New' } }),
    expect: statuses(201, 201, 201, 403, 403),
  },
  {
    route: 'GET /api/workspaces/:ws/chats/:id/',
    label: 'private chat',
    request: async (w) => ({ url: (await memberChat(w)).base }),
    expect: memberOnly,
  },
  {
    route: 'GET /api/workspaces/:ws/chats/:id/',
    label: 'public chat',
    request: async (w) => ({ url: (await memberChat(w, { isPublic: true })).base }),
    expect: statuses(200, 200, 200, 403, 403),
  },
  {
    route: 'PUT /api/workspaces/:ws/chats/:id/',
    request: async (w) => ({ url: (await memberChat(w)).base, body: { name: 'Renamed' } }),
    expect: memberOnly,
  },
  {
    route: 'PATCH /api/workspaces/:ws/chats/:id/',
    label: 'public chat: readers are refused with 403',
    request: async (w) => ({ url: (await memberChat(w, { isPublic: true })).base, body: { name: 'Renamed' } }),
    expect: statuses(403, 403, 200, 403, 403),
  },
  {
    route: 'DELETE /api/workspaces/:ws/chats/:id/',
    request: async (w) => ({ url: (await memberChat(w)).base }),
    expect: statuses(404, 404, 204, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:id/toggle-public/',
    request: async (w) => ({ url: `${(await memberChat(w)).base}toggle-public/` }),
    expect: memberOnly,
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:id/share/',
    request: async (w) => ({ url: `${(await memberChat(w)).base}share/`, body: { email: w.users.admin.email } }),
    expect: statuses(404, 404, 201, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:id/revoke-share/',
    request: async (w) => ({ url: `${(await memberChat(w)).base}revoke-share/`, body: { email: w.member2.email } }),
    expect: statuses(404, 404, 204, 403, 403),
  },
  {
    route: 'GET /api/workspaces/:ws/chats/:id/shares/',
    request: async (w) => ({ url: `${(await memberChat(w)).base}shares/` }),
    expect: memberOnly,
  },
  {
    route: 'GET /api/chats/shared/:link_uuid/',
    label: 'not public: owner of the chat only (and sharees)',
    request: async (w) => ({ url: `/api/chats/shared/${(await memberChat(w)).link_uuid}/` }),
    expect: statuses(404, 404, 200, 404, 404),
  },
  {
    route: 'GET /api/chats/shared/:link_uuid/',
    label: 'public: anyone',
    request: async (w) => ({ url: `/api/chats/shared/${(await memberChat(w, { isPublic: true })).link_uuid}/` }),
    expect: statuses(200, 200, 200, 200, 200),
  },
];
