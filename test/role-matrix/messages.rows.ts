import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { agentTasks, messages } from '../../src/modules/messages/messages.table.js';
import { type MatrixRow, statuses, type World } from './world.js';

let fake: FakeModelServer | undefined;
/** Provider settings pointing at a fake model server; filled by `startModelFake`. */
export const modelEnv: Record<string, string> = {};

export async function startModelFake() {
  fake = await startFakeModelServer();
  Object.assign(modelEnv, fake.env);
}

export async function stopModelFake() {
  await fake?.close();
}

/**
 * A public chat owned by the plain member (so everyone in the workspace can read it), shared
 * with member2, holding one user message by the member, its reply (of stream `matrix-stream`) and
 * an agent task.
 */
async function publicChat(w: World) {
  const chats = w.t.deps.services.chats;
  const chat = await chats.create(w.users.member.id, w.workspace.id, {
    name: 'Matrix chat',
    system_prompt: '',
    agent_framework: 'tools',
    model_parameters: {},
  });
  await chats.togglePublic(w.users.member.id, w.workspace.id, chat.id);
  const db = w.t.deps.database.db;
  const [question] = await db
    .insert(messages)
    .values({ sessionId: chat.id, role: 'user', content: 'Question?', authorId: w.users.member.id })
    .returning();
  const [answer] = await db
    .insert(messages)
    .values({
      sessionId: chat.id,
      role: 'assistant',
      content: 'Answer.',
      parentId: question!.id,
      aiModel: chat.ai_model,
      streamId: 'matrix-stream',
    })
    .returning();
  const [task] = await db
    .insert(agentTasks)
    .values({ sessionId: chat.id, userMessageId: question!.id, requestedBy: w.users.member.id })
    .returning();
  const base = `/api/workspaces/${w.workspace.id}/chats/${chat.id}/messages/`;
  return { base, question: question!.id, answer: answer!.id, task: task!.id };
}

// Readers of a public chat may read and rate; sending, editing, stopping and deleting need the
// owner (or a sharee): the workspace owner and admin get 403 on this member's chat.
const readers = statuses(200, 200, 200, 403, 403);
const writers = (ok: number) => statuses(403, 403, ok, 403, 403);

export const messagesRows: MatrixRow[] = [
  { route: 'GET /api/workspaces/:ws/chats/:session/messages/', request: async (w) => ({ url: (await publicChat(w)).base }), expect: readers },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/messages/stream/',
    request: async (w) => ({ url: `${(await publicChat(w)).base}stream/`, body: { content: 'Hi' } }),
    expect: writers(200),
  },
  {
    // Reattaching is reading: the saved reply's stream answers its `done`.
    route: 'GET /api/workspaces/:ws/chats/:session/messages/stream/:stream_id/',
    request: async (w) => ({ url: `${(await publicChat(w)).base}stream/matrix-stream/` }),
    expect: readers,
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/messages/stream/stop/',
    request: async (w) => ({ url: `${(await publicChat(w)).base}stream/stop/`, body: { stream_id: 'abc' } }),
    expect: writers(202),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/messages/regenerate/stream/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}regenerate/stream/`, body: { user_message_id: chat.question } };
    },
    expect: writers(200),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/messages/:id/edit/stream/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}${chat.question}/edit/stream/`, body: { content: 'Edited?' } };
    },
    expect: writers(200),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/messages/:id/feedback/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}${chat.answer}/feedback/`, body: { rating: 'up' } };
    },
    expect: readers,
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/messages/',
    request: async (w) => ({ url: (await publicChat(w)).base, body: { content: 'Hi' } }),
    expect: writers(201),
  },
  {
    route: 'POST /api/workspaces/:ws/chats/:session/messages/regenerate/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}regenerate/`, body: { user_message_id: chat.question } };
    },
    expect: writers(201),
  },
  {
    route: 'GET /api/workspaces/:ws/chats/:session/messages/:id/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}${chat.answer}/` };
    },
    expect: readers,
  },
  {
    route: 'PUT /api/workspaces/:ws/chats/:session/messages/:id/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}${chat.question}/`, body: { content: 'Changed' } };
    },
    expect: writers(200),
  },
  {
    route: 'PATCH /api/workspaces/:ws/chats/:session/messages/:id/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}${chat.question}/`, body: { content: 'Changed' } };
    },
    expect: writers(200),
  },
  {
    route: 'DELETE /api/workspaces/:ws/chats/:session/messages/:id/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}${chat.question}/` };
    },
    expect: writers(204),
  },
  {
    route: 'GET /api/workspaces/:ws/chats/:session/messages/agent-task-status/:task_id/',
    request: async (w) => {
      const chat = await publicChat(w);
      return { url: `${chat.base}agent-task-status/${chat.task}/` };
    },
    expect: readers,
  },
];
