import { z } from 'zod';
import { defineJob } from '../../platform/queue/jobs.js';
import type { MessagesService } from './messages.service.js';

/**
 * The reply of an async agent task (AGENT_ASYNC_ENABLED); the job's id is the task's id, and a
 * finished task is skipped. Model failures are retried (the task shows PENDING between attempts);
 * refusals and spent attempts end it FAILURE. `backoffMs` (AGENT_TASK_RETRY_BACKOFF_MS) is the
 * first retry's delay.
 */
export function agentReplyJob(messages: () => MessagesService, options: { backoffMs?: number } = {}) {
  return defineJob({
    name: 'chat.agent-reply',
    payload: z.object({ taskId: z.uuid() }),
    attempts: 3,
    backoffMs: options.backoffMs ?? 2000,
    // A reply with tool calls takes seconds to a few minutes; one stuck past this is let go and retried.
    timeoutMs: 5 * 60_000,
    handler: ({ taskId }) => messages().runAgentTask(taskId),
    onRetry: (tx, { taskId }) => messages().markAgentTaskRetry(tx, taskId),
    onGiveUp: (tx, { taskId }, failure) => messages().markAgentTaskFailed(tx, taskId, failure),
    onRedrive: (tx, { taskId }) => messages().reopenAgentTask(tx, taskId),
  });
}
