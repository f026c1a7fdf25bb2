import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { recordUsage } from '../../../test/support/billing.js';
import { chatWorld, deltaText, injectStream, ledgerRows, messageRows, useChatTestApp } from '../../../test/support/chat.js';
import { agentTasks } from './messages.table.js';
import { creditReservations } from '../billing/billing.table.js';
import { GENERIC_MODEL_FAILURE } from './messages.service.js';

// Retries 50 ms then 100 ms apart instead of 2 s and 4 s.
const { t, fake } = useChatTestApp({ AGENT_ASYNC_ENABLED: 'true', AGENT_TASK_RETRY_BACKOFF_MS: '50' });

const status = (base: string, taskId: string, as: { token: string }) => t.get(`${base}agent-task-status/${taskId}/`, as);

describe('AGENT_ASYNC_ENABLED', () => {
  it('a non-streamed send answers 202 with the user message and agent_task_id; the job saves the reply', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Answered in the background', usage: { inputTokens: 5, outputTokens: 4 } });
    const res = await t.post(w.base, { role: 'user', content: 'Work on this' }, w.alice);
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toEqual({
      id: expect.any(String),
      session: w.chat.id,
      role: 'user',
      content: 'Work on this',
      author: w.alice.id,
      parent: null,
      attachments: [],
      rating: null,
      reason: '',
      stopped: false,
      usage: null,
      ai_model: null,
      sources: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
      agent_task_id: expect.any(String),
    });

    await t.deps.jobs.drain();
    const done = await status(w.base, body.agent_task_id, w.alice);
    expect(done.statusCode).toBe(200);
    expect(done.json()).toEqual({ task_id: body.agent_task_id, status: 'SUCCESS', message_id: expect.any(String), error: null });

    const reply = (await messageRows(t, w.chat.id)).find((r) => r.id === done.json().message_id)!;
    expect(reply).toMatchObject({ role: 'assistant', content: 'Answered in the background', parentId: body.id, stopped: false });
    expect(fake.requestsTo('openai.chat')[0]!.body.messages.at(-1)).toEqual({ role: 'user', content: 'Work on this' });
    // Charged once, no reservation left open (the request's own was released when the task was queued).
    const ledger = await ledgerRows(t, w.ws.id);
    expect(ledger.map((row) => row.referenceId)).toEqual([`chat:${reply.id}`]);
    const reservations = await t.deps.database.db.select().from(creditReservations).where(eq(creditReservations.workspaceId, w.ws.id));
    expect(reservations.every((r) => r.closedAt !== null)).toBe(true);

    // Readers of the chat may poll; the sharee sees it too.
    expect((await status(w.base, body.agent_task_id, w.bob)).json().status).toBe('SUCCESS');
  });

  it('a task id of another chat, an unknown or malformed id is 404', async () => {
    const w = await chatWorld(t);
    const res = await t.post(w.base, { content: 'Mine' }, w.alice);
    const taskId = res.json().agent_task_id as string;
    await t.deps.jobs.drain();
    const otherChat = (await t.post(`/api/workspaces/${w.ws.id}/chats/`, { name: 'Other' }, w.alice)).json();
    const otherBase = `/api/workspaces/${w.ws.id}/chats/${otherChat.id}/messages/`;
    expect((await status(otherBase, taskId, w.alice)).statusCode).toBe(404);
    expect((await status(w.base, '00000000-0000-4000-8000-000000000000', w.alice)).statusCode).toBe(404);
    expect((await status(w.base, 'not-a-uuid', w.alice)).statusCode).toBe(404);
    // A member who cannot read the chat does not learn about its tasks.
    expect((await status(w.base, taskId, w.carol)).statusCode).toBe(404);
  });

  it('a model that keeps failing makes the task FAILURE with a generic error after the retries', async () => {
    const w = await chatWorld(t);
    fake.enqueue(
      { status: 400, errorMessage: 'provider secret 1' },
      { failAfterChunks: 1, failMode: 'error-event', errorMessage: 'provider secret 2' },
      { status: 422, errorMessage: 'provider secret 3' },
    );
    const res = await t.post(w.base, { content: 'Doomed' }, w.alice);
    expect(res.statusCode).toBe(202);
    const taskId = res.json().agent_task_id as string;
    await t.deps.jobs.drain();

    const task = await status(w.base, taskId, w.alice);
    expect(task.json()).toEqual({ task_id: taskId, status: 'FAILURE', message_id: null, error: GENERIC_MODEL_FAILURE });
    expect(fake.requestsTo('openai.chat')).toHaveLength(3);
    expect((await messageRows(t, w.chat.id)).map((r) => r.role)).toEqual(['user']);
    expect(await ledgerRows(t, w.ws.id)).toEqual([]);
    const reservations = await t.deps.database.db.select().from(creditReservations).where(eq(creditReservations.workspaceId, w.ws.id));
    expect(reservations.every((r) => r.closedAt !== null)).toBe(true);
  });

  it('a failure then a success on retry ends in SUCCESS', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ status: 400, errorMessage: 'transient' }, { text: 'Second time lucky' });
    const res = await t.post(w.base, { content: 'Retry me' }, w.alice);
    await t.deps.jobs.drain();
    const task = (await status(w.base, res.json().agent_task_id, w.alice)).json();
    expect(task).toMatchObject({ status: 'SUCCESS', error: null });
    const replies = (await messageRows(t, w.chat.id)).filter((r) => r.role === 'assistant');
    expect(replies.map((r) => [r.id, r.content])).toEqual([[task.message_id, 'Second time lucky']]);
  });

  it('a refusal at run time (archived workspace) fails the task at once with its message', async () => {
    const w = await chatWorld(t);
    const res = await t.post(w.base, { content: 'Later' }, w.alice);
    const taskId = res.json().agent_task_id as string;
    await t.deps.jobs.drain();
    // Simulate a task still waiting when the workspace is archived: reset it and run it again.
    await t.deps.database.db
      .update(agentTasks)
      .set({ status: 'PENDING', messageId: null, replyId: randomUUID() })
      .where(eq(agentTasks.id, taskId));
    expect((await t.patch(`/api/workspaces/${w.ws.id}/`, { status: 'archived' }, w.wsOwner)).statusCode).toBe(200);
    const calls = fake.requests.length;
    await t.deps.jobs.enqueue('chat.agent-reply', { taskId });
    await t.deps.jobs.drain();
    const task = (await status(w.base, taskId, w.alice)).json();
    expect(task.status).toBe('FAILURE');
    expect(task.error).toMatch(/archived/i);
    expect(fake.requests.length).toBe(calls);
  });

  it('the streamed endpoints still stream, and regenerate/ still answers 201', async () => {
    const w = await chatWorld(t);
    fake.enqueue({ text: 'Streamed' }, { text: 'Regenerated' });
    const streamed = await injectStream(t, `${w.base}stream/`, { content: 'Stream it' }, w.alice);
    expect(deltaText(streamed.events)).toBe('Streamed');
    const regen = await t.post(`${w.base}regenerate/`, { user_message_id: streamed.done.user_message_id }, w.alice);
    expect(regen.statusCode).toBe(201);
    expect(regen.json()).toMatchObject({ role: 'assistant', content: 'Regenerated', parent: streamed.done.user_message_id });
  });

  it('refusals come before the task: no message and no task when the credit is used up', async () => {
    const w = await chatWorld(t);
    await recordUsage(t, w.ws.id, 1);
    const res = await t.post(w.base, { content: 'No credit' }, w.alice);
    expect(res.statusCode).toBe(402);
    expect(res.json().code).toBe('credit_exhausted');
    expect(await messageRows(t, w.chat.id)).toEqual([]);
    expect(await t.deps.database.db.select().from(agentTasks)).toEqual([]);
  });
});
