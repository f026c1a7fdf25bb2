import { z } from 'zod';
import { defineJob } from '../../platform/queue/jobs.js';
import type { MessagesService } from './messages.service.js';

/**
 * The reply of an async agent task (AGENT_ASYNC_ENABLED): idempotent by task id. Model failures
 * are retried; `backoffMs` (AGENT_TASK_RETRY_BACKOFF_MS) is the first retry's delay.
 */
export function agentReplyJob(messages: () => MessagesService, options: { backoffMs?: number } = {}) {
  return defineJob({
    name: 'chat.agent-reply',
    payload: z.object({ taskId: z.uuid() }),
    attempts: 3,
    backoffMs: options.backoffMs ?? 2000,
    handler: ({ taskId }, context) => messages().runAgentTask(taskId, context.isFinalAttempt),
  });
}
