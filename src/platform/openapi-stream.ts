/** The event stream of the streamed endpoints in the OpenAPI document: its events, protocol and schemas. */
import { type Json, ref } from './openapi-ref.js';

function sseEvent(name: string, dataSchema: string): Json {
  return {
    type: 'object',
    title: name,
    required: ['event', 'data'],
    properties: {
      id: { type: 'string', description: 'The event\'s number in its stream (1, 2, 3, ...): send the last one seen as `Last-Event-ID` to reattach.' },
      event: { const: name },
      data: { type: 'string', contentMediaType: 'application/json', contentSchema: ref('schemas', dataSchema) },
    },
  };
}

export const STREAM_EVENTS = [
  { event: 'delta', schema: 'StreamDelta' },
  { event: 'tool', schema: 'StreamTool' },
  { event: 'done', schema: 'StreamDone' },
  { event: 'error', schema: 'StreamError' },
] as const;

/** Prose shared by the streamed operations: the events, the stream id and the stop protocol. */
export const STREAM_PROTOCOL =
  'With `Accept: text/event-stream` (or no Accept, or `*/*`) the answer is `200 text/event-stream`; each event is ' +
  '`id: <n>`, `event: <name>` and one `data:` line of JSON: `delta` (`StreamDelta`, a piece of the reply text), `tool` ' +
  '(`StreamTool`, a tool call starting or ending), then exactly one of `done` (`StreamDone`: the saved reply and ' +
  'user message ids, usage, whether it was stopped, the cited `sources`) or `error` (`StreamError`: the reply failed after the stream ' +
  'opened; nothing was charged for the missing part). `: ping` comments keep idle connections open. The ' +
  '`X-Stream-Id` response header (or the `stream_id` you sent) names the stream: `POST .../messages/stream/stop/` ' +
  'with `{"stream_id"}` stops it from any connection, and the stream then ends with `done` and `stopped: true`. ' +
  'A client that loses the connection reattaches with `GET .../messages/stream/{stream_id}/` and `Last-Event-ID`. ' +
  'Every refusal (validation, permissions, plan, credit, throttling) is answered before the stream opens, as a JSON ' +
  'error. A client that does not accept `text/event-stream` gets the saved reply as `201 application/json`.';

/** The `200` of a streamed operation (OpenAPI 3.2 `itemSchema`: one schema per event). */
export function eventStreamResponse(): Json {
  return {
    description: 'The reply as server-sent events (see the operation description).',
    headers: { 'X-Stream-Id': ref('headers', 'X-Stream-Id') },
    content: {
      'text/event-stream': {
        itemSchema: { oneOf: STREAM_EVENTS.map(({ event, schema }) => sseEvent(event, schema)) },
        example:
          'id: 1\nevent: delta\ndata: {"text":"Our refund window is "}\n\n' +
          'id: 2\nevent: delta\ndata: {"text":"30 days."}\n\n' +
          'id: 3\nevent: done\ndata: {"message_id":"0198f2c4-5b1e-7c3a-9d2e-4f6a8b0c1d2e","user_message_id":"0198f2c4-5a90-7e11-8b3c-1a2b3c4d5e6f","usage":{"prompt_tokens":412,"completion_tokens":9,"total_tokens":421},"stopped":false,"sources":[]}\n\n',
      },
    },
  };
}


export const streamEventSchemas: Record<string, Json> = {
  StreamDelta: {
    type: 'object',
    description: '`event: delta`: the next piece of the reply text.',
    required: ['text'],
    properties: { text: { type: 'string' } },
    example: { text: 'Our refund window is ' },
  },
  StreamTool: {
    type: 'object',
    description: '`event: tool`: a tool call (such as `search_knowledge_base`) started or finished.',
    required: ['id', 'name', 'status'],
    properties: { id: { type: 'string' }, name: { type: 'string' }, status: { type: 'string', enum: ['started', 'finished', 'failed'] } },
    example: { id: 'call_1', name: 'search_knowledge_base', status: 'started' },
  },
  StreamDone: {
    type: 'object',
    description: '`event: done`: the reply is saved; the last event of a successful stream.',
    required: ['message_id', 'user_message_id', 'usage', 'stopped', 'sources'],
    properties: {
      message_id: { type: 'string', format: 'uuid', description: 'The saved assistant message.' },
      user_message_id: { type: 'string', format: 'uuid', description: 'The user message it answers.' },
      usage: {
        type: ['object', 'null'],
        properties: {
          prompt_tokens: { type: 'integer' },
          completion_tokens: { type: 'integer' },
          total_tokens: { type: 'integer' },
        },
      },
      stopped: { type: 'boolean', description: 'True when a stop request ended the reply early.' },
      sources: {
        type: 'array',
        description: 'The knowledge-base chunks the reply cites (empty when none), as in the saved message.',
        items: {
          type: 'object',
          required: ['document_id', 'document_name', 'chunk_id', 'score'],
          properties: {
            document_id: { type: 'string', format: 'uuid' },
            document_name: { type: 'string' },
            chunk_id: { type: 'string', format: 'uuid' },
            score: { type: 'number' },
          },
        },
      },
    },
    example: {
      message_id: '0198f2c4-5b1e-7c3a-9d2e-4f6a8b0c1d2e',
      user_message_id: '0198f2c4-5a90-7e11-8b3c-1a2b3c4d5e6f',
      usage: { prompt_tokens: 412, completion_tokens: 9, total_tokens: 421 },
      stopped: false,
      sources: [
        { document_id: '0198f2b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b', document_name: 'refund-policy.pdf', chunk_id: '0198f2b0-2d3e-7f4a-9b5c-6d7e8f9a0b1c', score: 0.82 },
      ],
    },
  },
  StreamError: {
    type: 'object',
    description: '`event: error`: the reply failed after the stream opened; the last event of a failed stream.',
    required: ['detail'],
    properties: { detail: { type: 'string' } },
    example: { detail: 'The model could not produce a reply. Please try again.' },
  },
};
