import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentTasks, messages } from '../../src/modules/messages/messages.table.js';
import { billingEnv, startBillingFakes, stopBillingFakes } from '../role-matrix/billing.rows.js';
import { documentsEnv, startDocumentsSite, stopDocumentsSite } from '../role-matrix/documents.rows.js';
import { modelEnv, startModelFake, stopModelFake } from '../role-matrix/messages.rows.js';
import { buildWorld, type World } from '../role-matrix/world.js';
import { useTestApp } from '../support/app.js';
import { multipartBody } from '../support/multipart.js';

/*
 * The schema fuzz test: walks the app's own OpenAPI document (/api/schema/) and, for every
 * operation, every string field of its JSON body and every query and path parameter, sends NUL
 * bytes, lone surrogates, oversized values and malformed shapes, as the workspace owner of a
 * world where every path parameter names a real object (so path-level checks pass and the body
 * is really validated). Every answer is below 500; every error is JSON {detail, code} (plus
 * `errors`); a NUL or a lone surrogate is 400 validation_error naming the field.
 */

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  minItems?: number;
};

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  query: Array<{ name: string; schema: JsonSchema }>;
  jsonBody?: JsonSchema;
  multipart: boolean;
}

interface FuzzCase {
  label: string;
  url: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** The answer must be exactly this 400, naming this field (`in` as in the detail). */
  gate?: { field: string; in: 'body' | 'querystring' | 'params' | 'headers' };
}

const NUL = 'fuzz\u0000nul';
const LONE = 'fuzz\ud800lone';
const HUGE = 'x'.repeat(100_000);

/** Multipart fields of operations whose schema says only "multipart/form-data". */
const MULTIPART_FIELDS: Record<string, string[]> = {
  'POST /api/transcribe-audio/': ['workspace_id', 'language'],
  'POST /api/workspaces/{ws}/chats/{session}/messages/': ['content', 'stream_id'],
  'POST /api/workspaces/{ws}/chats/{session}/messages/stream/': ['content', 'stream_id'],
};

/** Operations whose body is not JSON the gate sees (a raw, signed body), with the reason. */
const RAW_BODY = new Set(['POST /api/subscriptions/webhook']);

/** A path parameter's name in the validation errors, when it differs from the document's (Fastify's wildcard). */
const PARAM_FIELD: Record<string, string> = { path: '*' };

type Document = {
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components?: { schemas?: Record<string, JsonSchema> };
};

/** The schema with every `$ref` to a named component replaced by the component (named schemas are shared). */
function resolveRefs(schema: unknown, doc: Document, seen: string[] = []): JsonSchema {
  if (Array.isArray(schema)) return schema.map((item) => resolveRefs(item, doc, seen)) as unknown as JsonSchema;
  if (!schema || typeof schema !== 'object') return schema as JsonSchema;
  const ref = (schema as { $ref?: string }).$ref;
  if (ref?.startsWith('#/components/schemas/')) {
    const name = ref.slice('#/components/schemas/'.length);
    if (seen.includes(name)) return {};
    return resolveRefs(doc.components?.schemas?.[name], doc, [...seen, name]);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, resolveRefs(value, doc, seen)])) as JsonSchema;
}

function operations(doc: Document): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const parameters = (op.parameters ?? []) as Array<{ in: string; name: string; schema: JsonSchema }>;
      const content = (op.requestBody as { content?: Record<string, { schema: JsonSchema }> } | undefined)?.content ?? {};
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        jsonBody: content['application/json'] ? resolveRefs(content['application/json'].schema, doc) : undefined,
        multipart: 'multipart/form-data' in content || `${method.toUpperCase()} ${path}` in MULTIPART_FIELDS,
      });
    }
  }
  return out;
}

// --- the world's ids for every path parameter ----------------------------------------------------

interface FuzzWorld extends World {
  chat: { id: string; link: string };
  message: string;
  task: string;
  kb: string;
  document: string;
}

async function buildFuzzWorld(t: ReturnType<typeof useTestApp>): Promise<FuzzWorld> {
  const world = await buildWorld(t);
  const owner = world.users.owner;
  const services = t.deps.services;
  const chat = await services.chats.create(owner.id, world.workspace.id, { name: 'Fuzz chat', system_prompt: '', agent_framework: 'tools', model_parameters: {} });
  const { link_uuid } = await services.chats.togglePublic(owner.id, world.workspace.id, chat.id);
  const db = t.deps.database.db;
  const [question] = await db.insert(messages).values({ sessionId: chat.id, role: 'user', content: 'Question?', authorId: owner.id }).returning();
  await db.insert(messages).values({ sessionId: chat.id, role: 'assistant', content: 'Answer.', parentId: question!.id, aiModel: chat.ai_model });
  const [task] = await db.insert(agentTasks).values({ sessionId: chat.id, userMessageId: question!.id, requestedBy: owner.id }).returning();
  const kb = await services.knowledgeBases.create(owner.id, world.workspace.id, { name: 'Fuzz KB', description: '', is_shared_with_workspace: false });
  const { document } = await services.documents.upload(owner.id, world.workspace.id, { name: 'fuzz.txt', content_type: 'text/plain', size: 10, knowledge_base_ids: [] });
  return { ...world, chat: { id: chat.id, link: link_uuid! }, message: question!.id, task: task!.id, kb: kb.id, document: document.id };
}

/** The id a path parameter stands for, from the parameter's name or the segment before it. */
function paramValue(w: FuzzWorld, path: string, name: string): string {
  const before = path.split(`{${name}}`)[0]!.split('/').filter(Boolean).at(-1);
  switch (name) {
    case 'ws':
      return w.workspace.id;
    case 'session':
      return w.chat.id;
    case 'task_id':
      return w.task;
    case 'link_uuid':
      return w.chat.link;
    case 'invitationId':
      return path.startsWith('/api/teams/') ? w.invitations.memberToTeam : w.invitations.outsider;
    default:
      break;
  }
  const byCollection: Record<string, string> = {
    users: String(w.users.owner.id),
    workspaces: w.workspace.id,
    workspacememberships: w.memberships.member,
    chats: w.chat.id,
    'knowledge-bases': w.kb,
    documents: w.document,
    messages: w.message,
    teams: w.team.id,
    teammemberships: w.teamMemberships.member2,
    invitations: w.invitations.outsider,
  };
  return byCollection[before ?? ''] ?? randomUUID();
}

function url(op: Operation, w: FuzzWorld, override: Record<string, string> = {}, query = ''): string {
  let out = op.path;
  for (const name of op.pathParams) out = out.replace(`{${name}}`, override[name] ?? encodeURIComponent(paramValue(w, op.path, name)));
  return query ? `${out}?${query}` : out;
}

// --- sample values from the schema ---------------------------------------------------------------

function options(schema: JsonSchema): JsonSchema[] {
  return schema.anyOf ?? schema.oneOf ?? [];
}

function typeOf(schema: JsonSchema): string | undefined {
  const types = [schema.type].flat().filter((t) => t && t !== 'null');
  return types[0] as string | undefined;
}

/** A plausible value for `schema` (it need not pass validation: the gate runs before it). */
function sample(schema: JsonSchema, w: FuzzWorld, name = '', depth = 0): unknown {
  if (depth > 4) return null;
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const choice = options(schema).find((option) => typeOf(option) !== undefined) ?? schema.allOf?.[0];
  if (choice) return sample(choice, w, name, depth + 1);
  switch (typeOf(schema)) {
    case 'string':
      if (schema.format === 'email') return `fuzz-${randomUUID().slice(0, 8)}@example.com`;
      if (schema.format === 'uuid') return name === 'team' ? w.team.id : name === 'workspace' ? w.workspace.id : randomUUID();
      if (schema.format === 'uri') return 'https://example.com/fuzz';
      return 'fuzz-value-'.padEnd(Math.max(schema.minLength ?? 0, 12), 'z');
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    case 'array':
      return schema.minItems && schema.items ? [sample(schema.items, w, name, depth + 1)] : [];
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of schema.required ?? []) out[key] = sample(schema.properties?.[key] ?? {}, w, key, depth + 1);
      return out;
    }
    default:
      return null;
  }
}

/** Paths to every string leaf of `schema` (object properties, array items, free-form maps). */
function stringPaths(schema: JsonSchema, prefix: Array<string | number> = [], depth = 0): Array<Array<string | number>> {
  if (depth > 4) return [];
  const choice = options(schema).find((option) => typeOf(option) !== undefined);
  if (choice) return stringPaths(choice, prefix, depth + 1);
  const type = typeOf(schema);
  if (type === 'string') return [prefix];
  if (type === 'array' && schema.items) return stringPaths(schema.items, [...prefix, 0], depth + 1);
  if (type === 'object') {
    const out = Object.entries(schema.properties ?? {}).flatMap(([key, value]) => stringPaths(value, [...prefix, key], depth + 1));
    if (schema.additionalProperties && typeof schema.additionalProperties === 'object') out.push([...prefix, 'fuzz_key']);
    else if (schema.additionalProperties === true || (!schema.properties && depth > 0)) out.push([...prefix, 'fuzz_key']);
    return out;
  }
  return [];
}

/** `base` with the value at `path` replaced (creating containers on the way). */
function withValue(base: unknown, path: Array<string | number>, value: unknown): unknown {
  if (!path.length) return value;
  const [head, ...rest] = path;
  const container: Record<string | number, unknown> | unknown[] =
    typeof head === 'number' ? (Array.isArray(base) ? [...base] : []) : base && typeof base === 'object' && !Array.isArray(base) ? { ...base } : {};
  (container as Record<string | number, unknown>)[head!] = withValue((container as Record<string | number, unknown>)[head!], rest, value);
  return container;
}

function deeplyNested(levels: number): string {
  return `${'['.repeat(levels)}"${'\\u0000'}"${']'.repeat(levels)}`;
}

// --- the cases of one operation --------------------------------------------------------------------

function casesFor(op: Operation, w: FuzzWorld): FuzzCase[] {
  const key = `${op.method} ${op.path}`;
  const cases: FuzzCase[] = [];
  const json = { 'content-type': 'application/json' };

  // Every operation: a header (app.inject does not go through Node's parser, which refuses it).
  cases.push({ label: 'header NUL', url: url(op, w), headers: { 'x-fuzz': NUL }, gate: { field: 'x-fuzz', in: 'headers' } });
  if (!op.jsonBody && op.method !== 'GET' && !RAW_BODY.has(key)) {
    cases.push({ label: 'unexpected JSON body', url: url(op, w), body: { fuzz: NUL, [HUGE.slice(0, 300)]: [[[LONE]]] } });
  }

  for (const name of op.pathParams) {
    cases.push({ label: `path ${name} NUL`, url: url(op, w, { [name]: `${paramValue(w, op.path, name)}%00` }), gate: { field: PARAM_FIELD[name] ?? name, in: 'params' } });
    cases.push({ label: `path ${name} bad UTF-8 (lone surrogate)`, url: url(op, w, { [name]: '%ED%A0%80' }) });
    cases.push({ label: `path ${name} oversized`, url: url(op, w, { [name]: 'p'.repeat(5_000) }) });
  }

  for (const { name, schema } of op.query) {
    const valid = encodeURIComponent(String(sample(schema, w, name)));
    cases.push({ label: `query ${name} NUL`, url: url(op, w, {}, `${name}=${valid}%00`), gate: { field: name, in: 'querystring' } });
    cases.push({ label: `query ${name} bad UTF-8`, url: url(op, w, {}, `${name}=%ED%A0%80`) });
    cases.push({ label: `query ${name} oversized`, url: url(op, w, {}, `${name}=${'q'.repeat(10_000)}`) });
    cases.push({ label: `query ${name} repeated`, url: url(op, w, {}, `${name}=${valid}&${name}=${valid}`) });
  }

  if (op.jsonBody && !RAW_BODY.has(key)) {
    const base = sample(op.jsonBody, w);
    for (const path of stringPaths(op.jsonBody)) {
      const field = path.join('.');
      cases.push({ label: `body ${field} NUL`, url: url(op, w), body: withValue(base, path, NUL), gate: { field, in: 'body' } });
      cases.push({ label: `body ${field} lone surrogate`, url: url(op, w), body: withValue(base, path, LONE), gate: { field, in: 'body' } });
      cases.push({ label: `body ${field} oversized`, url: url(op, w), body: withValue(base, path, HUGE) });
      cases.push({ label: `body ${field} as object`, url: url(op, w), body: withValue(base, path, { nested: NUL.replace('\u0000', '') }) });
      cases.push({ label: `body ${field} as number`, url: url(op, w), body: withValue(base, path, 1e308) });
    }
    cases.push({ label: 'body key with NUL', url: url(op, w), body: { ...(base as object), ['k\u0000']: 1 }, gate: { field: 'non_field_errors', in: 'body' } });
    for (const [label, raw] of [
      ['body array', '[]'],
      ['body string', '"text"'],
      ['body null', 'null'],
      ['body truncated JSON', '{"a":'],
      ['body deeply nested', deeplyNested(5_000)],
    ] as const) {
      cases.push({ label, url: url(op, w), body: raw, headers: json });
    }
    cases.push({ label: 'body as text/plain', url: url(op, w), body: 'plain text', headers: { 'content-type': 'text/plain' } });
  }

  if (op.multipart) {
    const fields = MULTIPART_FIELDS[key] ?? Object.keys(op.jsonBody ? (sample(op.jsonBody, w) as object) ?? {} : {});
    const valid = (field: string) => (field === 'workspace_id' ? w.workspace.id : field === 'language' ? 'en' : 'Hello');
    for (const field of fields) {
      const parts = fields.map((name) => ({ name, value: name === field ? `${valid(name)}\u0000` : valid(name) }));
      const body = multipartBody(parts);
      cases.push({ label: `multipart ${field} NUL`, url: url(op, w), body: body.payload, headers: body.headers, gate: { field, in: 'body' } });
    }
    const cut = multipartBody(fields.map((name) => ({ name, value: valid(name) })));
    cases.push({ label: 'multipart cut short', url: url(op, w), body: cut.payload.subarray(0, cut.payload.length - 20), headers: cut.headers });
    cases.push({ label: 'multipart without boundary', url: url(op, w), body: cut.payload, headers: { 'content-type': 'multipart/form-data' } });
    const many = multipartBody(Array.from({ length: 200 }, (_, i) => ({ name: `f${i}`, value: 'v' })));
    cases.push({ label: 'multipart 200 fields', url: url(op, w), body: many.payload, headers: many.headers });
  }
  return cases;
}

// --- the run -----------------------------------------------------------------------------------------

const env: Record<string, string> = {};
beforeAll(async () => {
  await Promise.all([startBillingFakes(), startModelFake(), startDocumentsSite()]);
  Object.assign(env, billingEnv, modelEnv, documentsEnv, {
    THROTTLE_CHAT_MESSAGES: '100000/minute',
    THROTTLE_TRANSCRIPTIONS: '100000/minute',
    THROTTLE_TRANSLATIONS: '100000/minute',
    THROTTLE_DOCUMENT_UPLOADS: '100000/hour',
    THROTTLE_LOGIN: '100000/minute',
  });
});
afterAll(async () => {
  await Promise.all([stopBillingFakes(), stopModelFake(), stopDocumentsSite()]);
});
const t = useTestApp(env);

function problemsOf(res: LightMyRequestResponse, fuzz: FuzzCase): string[] {
  const problems: string[] = [];
  if (res.statusCode >= 500) problems.push(`status ${res.statusCode}`);
  if (res.statusCode >= 400) {
    let body: Record<string, unknown> | undefined;
    try {
      body = res.json();
    } catch {
      problems.push('error body is not JSON');
    }
    if (body) {
      if (typeof body.detail !== 'string' || typeof body.code !== 'string') problems.push('error body lacks detail/code');
      const extra = Object.keys(body).filter((k) => !['detail', 'code', 'errors'].includes(k));
      if (extra.length) problems.push(`error body has ${extra.join(', ')}`);
      if (body.errors !== undefined) {
        const ok =
          body.errors !== null &&
          typeof body.errors === 'object' &&
          Object.values(body.errors).every((list) => Array.isArray(list) && list.every((m) => typeof m === 'string'));
        if (!ok) problems.push('errors is not {field: [string]}');
      }
      if (res.body.includes('\u0000') || res.body.includes('x'.repeat(1_000)) || res.body.includes('p'.repeat(1_000))) {
        problems.push('error body echoes the input');
      }
    }
    if (!String(res.headers['content-type']).startsWith('application/json')) problems.push(`content-type ${res.headers['content-type']}`);
  }
  if (fuzz.gate) {
    const body = res.statusCode === 400 ? (res.json() as { code?: string; detail?: string; errors?: Record<string, string[]> }) : undefined;
    if (!body || body.code !== 'validation_error' || body.detail !== `Invalid input in ${fuzz.gate.in}.` || !body.errors?.[fuzz.gate.field]) {
      problems.push(`expected 400 validation_error naming ${fuzz.gate.field} in ${fuzz.gate.in}, got ${res.statusCode} ${res.body.slice(0, 200)}`);
    }
  }
  return problems;
}

describe('schema fuzz', () => {
  it('every operation of /api/schema/ answers bad strings, oversized values and malformed shapes below 500 in {detail, code}', { timeout: 300_000 }, async () => {
    const doc = (await t.get('/api/schema/')).json();
    const ops = operations(doc);
    // Every registered API route is in the document (the fuzz covers all of them).
    expect(ops.length).toBeGreaterThan(90);

    let world = await buildFuzzWorld(t);
    const failures: string[] = [];
    const accepted: string[] = [];
    let requests = 0;
    const perOperation = new Map<string, number>();
    for (const op of ops) {
      const key = `${op.method} ${op.path}`;
      const count = casesFor(op, world).length;
      for (let index = 0; index < count; index += 1) {
        // Made again for each case: the world may have been rebuilt by the previous one.
        const fuzz = casesFor(op, world)[index]!;
        const payload = fuzz.body === undefined ? undefined : Buffer.isBuffer(fuzz.body) || typeof fuzz.body === 'string' ? fuzz.body : JSON.stringify(fuzz.body);
        const headers: Record<string, string> = {
          authorization: `Bearer ${world.users.owner.token}`,
          ...(payload !== undefined && !fuzz.headers ? { 'content-type': 'application/json' } : {}),
          ...fuzz.headers,
        };
        const res = await t.app.inject({ method: op.method as 'GET', url: fuzz.url, headers, ...(payload !== undefined ? { payload } : {}) });
        requests += 1;
        perOperation.set(key, (perOperation.get(key) ?? 0) + 1);
        const problems = problemsOf(res, fuzz);
        if (problems.length) failures.push(`${key} [${fuzz.label}]: ${problems.join('; ')}`);
        // A request that went through may have changed the world (a logout, a delete): start again.
        if (res.statusCode < 300) {
          accepted.push(`${key} [${fuzz.label}] ${res.statusCode}`);
          world = await buildFuzzWorld(t);
        }
      }
    }
    const summary = `${requests} requests over ${perOperation.size} of ${ops.length} operations; accepted (2xx):\n${accepted.join('\n')}`;
    expect(failures, summary).toEqual([]);
    // Every operation got cases.
    expect(ops.filter((op) => !perOperation.has(`${op.method} ${op.path}`))).toEqual([]);
    expect(requests).toBeGreaterThan(500);
  });
});
