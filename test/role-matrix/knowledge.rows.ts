import { newTeam } from '../support/factories.js';
import type { TestUser } from '../support/factories.js';
import { type MatrixRow, statuses, type World } from './world.js';

/*
 * Knowledge bases: read = creator, owner/admins, everyone when shared, teams with a rule;
 * write = creator, owner/admins, teams with a `write` rule; manage (delete, team access) =
 * creator, owner/admins. Invisible knowledge bases are 404, visible but read-only ones 403.
 */

const kbBase = (w: World) => `/api/workspaces/${w.workspace.id}/knowledge-bases/`;

/** A knowledge base created by `creator` (through the service), optionally shared with the workspace. */
async function kb(w: World, creator: TestUser, options: { shared?: boolean } = {}) {
  const created = await w.t.deps.services.knowledgeBases.create(creator.id, w.workspace.id, {
    name: 'Matrix KB',
    description: '',
    is_shared_with_workspace: options.shared ?? false,
  });
  return { id: created.id, url: `${kbBase(w)}${created.id}/` };
}

/** The plain member's private knowledge base. */
const memberKb = (w: World) => kb(w, w.users.member);
/** The owner's private knowledge base: the member may not even see it. */
const ownerKb = (w: World) => kb(w, w.users.owner);
/** The owner's knowledge base shared with the workspace: the member may read it only. */
const ownerSharedKb = (w: World) => kb(w, w.users.owner, { shared: true });

/** A pending upload by `uploader` (no file needed for linking). */
async function doc(w: World, uploader: TestUser, knowledgeBaseIds: string[] = []) {
  const { document } = await w.t.deps.services.documents.upload(uploader.id, w.workspace.id, {
    name: 'matrix.txt',
    content_type: 'text/plain',
    size: 10,
    knowledge_base_ids: knowledgeBaseIds,
  });
  return document.id;
}

/** The plain member's chat, shared with member2; optionally public (then every member reads it). */
async function memberChat(w: World, options: { isPublic?: boolean; attach?: string[] } = {}) {
  const chats = w.t.deps.services.chats;
  const chat = await chats.create(w.users.member.id, w.workspace.id, {
    name: 'Matrix chat',
    system_prompt: '',
    agent_framework: 'tools',
    model_parameters: {},
  });
  await chats.share(w.users.member.id, w.workspace.id, chat.id, w.member2.email);
  if (options.isPublic) await chats.togglePublic(w.users.member.id, w.workspace.id, chat.id);
  if (options.attach) await w.t.deps.services.knowledgeBases.attach(w.users.member.id, w.workspace.id, chat.id, options.attach);
  return `/api/workspaces/${w.workspace.id}/chats/${chat.id}/knowledge-bases/`;
}

const everyMember = (ok: number) => statuses(ok, ok, ok, 403, 403);
const hiddenFromMember = (ok: number) => statuses(ok, ok, 404, 403, 403);
const readOnlyForMember = (ok: number) => statuses(ok, ok, 403, 403, 403);
// The member's private chat: the workspace owner and admins cannot see it (404).
const chatOwnerOnly = (ok: number) => statuses(404, 404, ok, 403, 403);

export const knowledgeRows: MatrixRow[] = [
  { route: 'GET /api/workspaces/:ws/knowledge-bases/', request: (w) => ({ url: kbBase(w) }), expect: everyMember(200) },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/',
    request: (w) => ({ url: kbBase(w), body: { name: 'New KB' } }),
    expect: everyMember(201),
  },
  {
    route: 'GET /api/workspaces/:ws/knowledge-bases/:id/',
    label: "the member's knowledge base",
    request: async (w) => ({ url: (await memberKb(w)).url }),
    expect: everyMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/knowledge-bases/:id/',
    label: "the owner's private knowledge base",
    request: async (w) => ({ url: (await ownerKb(w)).url }),
    expect: hiddenFromMember(200),
  },
  {
    route: 'PUT /api/workspaces/:ws/knowledge-bases/:id/',
    label: "the member's knowledge base",
    request: async (w) => ({ url: (await memberKb(w)).url, body: { name: 'Renamed' } }),
    expect: everyMember(200),
  },
  {
    route: 'PUT /api/workspaces/:ws/knowledge-bases/:id/',
    label: "the owner's private knowledge base",
    request: async (w) => ({ url: (await ownerKb(w)).url, body: { name: 'Renamed' } }),
    expect: hiddenFromMember(200),
  },
  {
    route: 'PATCH /api/workspaces/:ws/knowledge-bases/:id/',
    label: 'shared with the workspace: read-only for the member',
    request: async (w) => ({ url: (await ownerSharedKb(w)).url, body: { description: 'Changed' } }),
    expect: readOnlyForMember(200),
  },
  {
    route: 'DELETE /api/workspaces/:ws/knowledge-bases/:id/',
    label: "the member's knowledge base",
    request: async (w) => ({ url: (await memberKb(w)).url }),
    expect: everyMember(204),
  },
  {
    route: 'DELETE /api/workspaces/:ws/knowledge-bases/:id/',
    label: 'shared with the workspace',
    request: async (w) => ({ url: (await ownerSharedKb(w)).url }),
    expect: readOnlyForMember(204),
  },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/:id/add-documents/',
    label: "the member's document",
    request: async (w) => {
      const base = await memberKb(w);
      return { url: `${base.url}add-documents/`, body: { document_ids: [await doc(w, w.users.member)] } };
    },
    expect: everyMember(200),
  },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/:id/add-documents/',
    label: "the admin's document, which the member cannot see",
    request: async (w) => {
      const base = await memberKb(w);
      return { url: `${base.url}add-documents/`, body: { document_ids: [await doc(w, w.users.admin)] } };
    },
    expect: statuses(200, 200, 400, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/:id/add-documents/',
    label: 'shared with the workspace: read-only for the member',
    request: async (w) => {
      const base = await ownerSharedKb(w);
      return { url: `${base.url}add-documents/`, body: { document_ids: [await doc(w, w.users.member)] } };
    },
    expect: readOnlyForMember(200),
  },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/:id/remove-documents/',
    request: async (w) => {
      const base = await memberKb(w);
      return { url: `${base.url}remove-documents/`, body: { document_ids: [await doc(w, w.users.member, [base.id])] } };
    },
    expect: everyMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/knowledge-bases/:id/documents/',
    label: "the member's knowledge base",
    request: async (w) => {
      const base = await memberKb(w);
      await doc(w, w.users.member, [base.id]);
      return { url: `${base.url}documents/` };
    },
    expect: everyMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/knowledge-bases/:id/documents/',
    label: "the owner's private knowledge base",
    request: async (w) => ({ url: `${(await ownerKb(w)).url}documents/` }),
    expect: hiddenFromMember(200),
  },
  {
    route: 'GET /api/workspaces/:ws/knowledge-bases/:id/team-access/',
    request: async (w) => ({ url: `${(await memberKb(w)).url}team-access/` }),
    expect: everyMember(200),
  },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/:id/team-access/',
    label: "the member's knowledge base",
    request: async (w) => ({ url: `${(await memberKb(w)).url}team-access/`, body: { team: w.team.id, permission: 'read' } }),
    expect: everyMember(200),
  },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/:id/team-access/',
    label: 'shared with the workspace: managing is refused to the member',
    request: async (w) => ({ url: `${(await ownerSharedKb(w)).url}team-access/`, body: { team: w.team.id, permission: 'write' } }),
    expect: readOnlyForMember(200),
  },
  {
    route: 'POST /api/workspaces/:ws/knowledge-bases/:id/team-access/',
    label: 'a team of another workspace',
    request: async (w) => {
      const foreign = await newTeam(w.t, w.otherWorkspace);
      return { url: `${(await memberKb(w)).url}team-access/`, body: { team: foreign.id, permission: 'read' } };
    },
    expect: everyMember(400),
  },
  {
    route: 'DELETE /api/workspaces/:ws/knowledge-bases/:id/team-access/',
    label: "the member's knowledge base",
    request: async (w) => {
      const base = await memberKb(w);
      await w.t.deps.services.knowledgeBases.grantTeamAccess(w.users.member.id, w.workspace.id, base.id, w.team.id, 'read');
      return { url: `${base.url}team-access/`, body: { team: w.team.id } };
    },
    expect: everyMember(204),
  },
  {
    route: 'DELETE /api/workspaces/:ws/knowledge-bases/:id/team-access/',
    label: 'shared with the workspace',
    request: async (w) => {
      const base = await ownerSharedKb(w);
      await w.t.deps.services.knowledgeBases.grantTeamAccess(w.users.owner.id, w.workspace.id, base.id, w.team.id, 'read');
      return { url: `${base.url}team-access/`, body: { team: w.team.id } };
    },
    expect: readOnlyForMember(204),
  },
  {
    route: 'GET /api/workspaces/:ws/chats/:session/knowledge-bases/',
    label: 'private chat',
    request: async (w) => ({ url: await memberChat(w, { attach: [(await memberKb(w)).id] }) }),
    expect: chatOwnerOnly(200),
  },
  {
    route: 'GET /api/workspaces/:ws/chats/:session/knowledge-bases/',
    label: 'public chat',
    request: async (w) => ({ url: await memberChat(w, { isPublic: true, attach: [(await memberKb(w)).id] }) }),
    expect: everyMember(200),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/knowledge-bases/attach/',
    label: 'private chat',
    request: async (w) => ({ url: `${await memberChat(w)}attach/`, body: { knowledge_base_ids: [(await memberKb(w)).id] } }),
    expect: chatOwnerOnly(200),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/knowledge-bases/attach/',
    label: 'public chat: readers may not attach',
    request: async (w) => ({
      url: `${await memberChat(w, { isPublic: true })}attach/`,
      body: { knowledge_base_ids: [(await memberKb(w)).id] },
    }),
    expect: statuses(403, 403, 200, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/knowledge-bases/attach/',
    label: "the owner's private knowledge base",
    request: async (w) => ({ url: `${await memberChat(w)}attach/`, body: { knowledge_base_ids: [(await ownerKb(w)).id] } }),
    expect: statuses(404, 404, 400, 403, 403),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/knowledge-bases/detach/',
    label: 'private chat',
    request: async (w) => {
      const base = await memberKb(w);
      return { url: `${await memberChat(w, { attach: [base.id] })}detach/`, body: { knowledge_base_ids: [base.id] } };
    },
    expect: chatOwnerOnly(200),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/knowledge-bases/detach/',
    label: 'public chat: readers may not detach',
    request: async (w) => {
      const base = await memberKb(w);
      return { url: `${await memberChat(w, { isPublic: true, attach: [base.id] })}detach/`, body: { knowledge_base_ids: [base.id] } };
    },
    expect: statuses(403, 403, 200, 403, 403),
  },
];
