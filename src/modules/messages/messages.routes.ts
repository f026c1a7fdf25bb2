import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser } from '../../platform/auth.js';
import { ValidationError } from '../../platform/errors.js';
import { faultLogFields } from '../../platform/faults.js';
import { formParts, registerMultipart } from '../../platform/multipart.js';
import { pageQuery, paginated, toPage } from '../../platform/pagination.js';
import { openEventStream } from '../../platform/sse.js';
import {
  agentTaskOut,
  asyncSendOut,
  chatPathParams,
  editBody,
  feedbackBody,
  MAX_FILES_PER_MESSAGE,
  MAX_MESSAGE_CHARS,
  messageOut,
  messagePathParams,
  regenerateBody,
  reattachHeaders,
  reattachQuery,
  sendBody,
  stopBody,
  streamPathParams,
  taskPathParams,
  updateMessageBody,
} from './messages.schemas.js';
import { type MessagesService, replyFailureDetail, type TurnEventSink } from './messages.service.js';
import type { MessageOut } from './messages.schemas.js';

const tags = ['messages'];
const base = '/api/workspaces/:ws/chats/:session/messages';

export interface MessagesRoutesOptions {
  messages: MessagesService;
  /** Largest attachment any plan allows; the plan's own limit is enforced per file. */
  maxFileBytes: number;
  heartbeatMs: number;
}

function requireBody<T>(body: T | null | undefined): T {
  if (body === undefined || body === null) throw new ValidationError('Request body is required.', { content: ['This field is required.'] });
  return body;
}

/** Rule 8: a client that does not accept an event stream gets the saved reply as JSON (201). */
function wantsEventStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return !accept || /text\/event-stream|\*\/\*/.test(accept);
}

export const messagesRoutes: FastifyPluginAsyncZod<MessagesRoutesOptions> = async (app, options) => {
  const { messages } = options;
  // Parts pass the input gate as they arrive (platform/multipart.ts).
  await registerMultipart(app, { files: MAX_FILES_PER_MESSAGE, fileSize: options.maxFileBytes, fields: 10, fieldSize: MAX_MESSAGE_CHARS * 4 });

  /**
   * The event stream of a streamed turn, opened by the service once every refusal was answered
   * as JSON; none for a client that does not accept an event stream (rule 8: the saved reply, 201).
   */
  function eventSink(request: FastifyRequest, reply: FastifyReply): TurnEventSink | undefined {
    if (!wantsEventStream(request)) return undefined;
    return {
      log: request.log,
      open: (streamId) => openEventStream(reply, { headers: { 'X-Stream-Id': streamId }, heartbeatMs: options.heartbeatMs }),
    };
  }

  /** 201 with the saved reply, or nothing more when it went out as events. */
  const answered = (reply: FastifyReply, saved: MessageOut | undefined) => (saved ? reply.code(201).send(saved) : reply);

  // A multipart request reaches validation with a null body (its parts are read in the handler).
  const sendSchema = { tags, params: chatPathParams, body: sendBody.nullish(), consumes: ['application/json', 'multipart/form-data'] };

  app.post(`${base}/stream/`, { schema: { ...sendSchema, response: { 201: messageOut } } }, async (request, reply) => {
    const { ws, session } = request.params;
    const input = request.isMultipart() ? formParts(request) : requireBody(request.body);
    return answered(reply, await messages.streamSend(currentUser(request).id, ws, session, input, eventSink(request, reply)));
  });

  app.post(
    `${base}/stream/stop/`,
    { schema: { tags, params: chatPathParams, body: stopBody, response: { 202: z.object({ detail: z.string() }) } } },
    async (request, reply) => {
      const { ws, session } = request.params;
      await messages.stop(currentUser(request).id, ws, session, request.body.stream_id);
      return reply.code(202).send({ detail: 'Stop requested.' });
    },
  );

  app.get(
    `${base}/stream/:stream_id/`,
    {
      schema: {
        tags,
        params: streamPathParams,
        querystring: reattachQuery,
        headers: reattachHeaders,
        produces: ['text/event-stream'],
      },
    },
    async (request, reply) => {
      const { ws, session, stream_id } = request.params;
      const lastEventId = request.headers['last-event-id'] ?? request.query.last_event_id ?? 0;
      const clientGone = new AbortController();
      const events = await messages.reattach(currentUser(request).id, ws, session, stream_id, lastEventId, clientGone.signal);
      const stream = openEventStream(reply, { headers: { 'X-Stream-Id': stream_id }, heartbeatMs: options.heartbeatMs });
      reply.raw.on('close', () => clientGone.abort());
      try {
        for await (const event of events) {
          if (stream.closed) break;
          stream.sendEncoded(event.event, event.data, event.id);
        }
      } catch (error) {
        const detail = replyFailureDetail(error);
        request.log.warn(faultLogFields(error), 'reattached stream failed');
        stream.send('error', { detail });
      } finally {
        stream.end();
      }
      return reply;
    },
  );

  app.post(
    `${base}/regenerate/stream/`,
    { schema: { tags, params: chatPathParams, body: regenerateBody, response: { 201: messageOut } } },
    async (request, reply) => {
      const { ws, session } = request.params;
      const { user_message_id, stream_id } = request.body;
      const sink = eventSink(request, reply);
      return answered(reply, await messages.streamRegenerate(currentUser(request).id, ws, session, user_message_id, stream_id, sink));
    },
  );

  app.post(
    `${base}/:id/edit/stream/`,
    { schema: { tags, params: messagePathParams, body: editBody, response: { 201: messageOut } } },
    async (request, reply) => {
      const { ws, session, id } = request.params;
      const { content, stream_id } = request.body;
      const sink = eventSink(request, reply);
      return answered(reply, await messages.streamEdit(currentUser(request).id, ws, session, id, content, stream_id, sink));
    },
  );

  app.post(
    `${base}/`,
    { schema: { ...sendSchema, response: { 201: messageOut, 202: asyncSendOut } }, config: { idempotent: true } },
    async (request, reply) => {
      const { ws, session } = request.params;
      const input = request.isMultipart() ? formParts(request) : requireBody(request.body);
      const sent = await messages.send(currentUser(request).id, ws, session, input);
      if (sent.status === 'queued') return reply.code(202).send({ ...sent.message, agent_task_id: sent.agentTaskId });
      return reply.code(201).send(sent.message);
    },
  );

  app.post(
    `${base}/regenerate/`,
    { schema: { tags, params: chatPathParams, body: regenerateBody, response: { 201: messageOut } } },
    async (request, reply) => {
      const { ws, session } = request.params;
      return reply.code(201).send(await messages.regenerate(currentUser(request).id, ws, session, request.body.user_message_id));
    },
  );

  app.get(
    `${base}/`,
    { schema: { tags, params: chatPathParams, querystring: pageQuery, response: { 200: paginated(messageOut) } } },
    async (request) => {
      const { ws, session } = request.params;
      return toPage(request, request.query, await messages.list(currentUser(request).id, ws, session, request.query));
    },
  );

  app.get(
    `${base}/agent-task-status/:task_id/`,
    { schema: { tags, params: taskPathParams, response: { 200: agentTaskOut } } },
    async (request) => {
      const { ws, session, task_id } = request.params;
      return messages.taskStatus(currentUser(request).id, ws, session, task_id);
    },
  );

  app.get(`${base}/:id/`, { schema: { tags, params: messagePathParams, response: { 200: messageOut } } }, async (request) => {
    const { ws, session, id } = request.params;
    return messages.get(currentUser(request).id, ws, session, id);
  });

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: `${base}/:id/`,
      schema: { tags, params: messagePathParams, body: updateMessageBody, response: { 200: messageOut } },
      handler: async (request) => {
        const { ws, session, id } = request.params;
        return messages.update(currentUser(request).id, ws, session, id, request.body.content);
      },
    });
  }

  app.delete(`${base}/:id/`, { schema: { tags, params: messagePathParams, response: { 204: z.undefined() } } }, async (request, reply) => {
    const { ws, session, id } = request.params;
    await messages.delete(currentUser(request).id, ws, session, id);
    return reply.code(204).send();
  });

  app.post(
    `${base}/:id/feedback/`,
    { schema: { tags, params: messagePathParams, body: feedbackBody, response: { 200: messageOut } } },
    async (request) => {
      const { ws, session, id } = request.params;
      const { rating, reason } = request.body;
      return messages.feedback(currentUser(request).id, ws, session, id, rating, reason);
    },
  );
};
