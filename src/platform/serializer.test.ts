import Fastify from 'fastify';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chatOut } from '../modules/chats/chats.schemas.js';
import { paginated } from './pagination.js';
import { plainResponse, serializerCompiler } from './serializer.js';

const chat = {
  id: '0198f2b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b',
  workspace: '0198f2a0-7d4e-7b21-9c3a-2f1e0d9c8b7a',
  owner: 42,
  name: 'Refund "policy" questions\n</script>',
  ai_model: 'gpt-4o-mini',
  ai_provider: 'openai',
  system_prompt: 'Cite the documents you use.',
  temperature: null,
  agent_framework: 'tools',
  model_parameters: { max_tokens: 1024, stop: ['\u2028'], nested: { a: [1, null] } },
  is_public: false,
  link_uuid: '0198f2b0-1c2d-7e3f-8a4b-aa6d7e8f9a11',
  created_at: '2025-03-14T09:26:53.589Z',
  updated_at: '2025-03-14T10:02:11.204Z',
};

async function serve(schema: z.ZodType, body: unknown) {
  const app = Fastify({ logger: false });
  app.setSerializerCompiler(serializerCompiler);
  app.get('/', { schema: { response: { 200: schema } } }, async () => body);
  try {
    const res = await app.inject({ method: 'GET', url: '/' });
    return { status: res.statusCode, body: res.body };
  } finally {
    await app.close();
  }
}

describe('plainResponse serialisation (fast-json-stringify)', () => {
  const page = plainResponse(paginated(chatOut));

  it('writes only the schema’s properties: internal columns and extra keys are not in the response', async () => {
    const leaky = {
      count: 2,
      next: 'http://localhost/api/workspaces/x/chats/?limit=1&offset=1',
      previous: null,
      total_internal: 7,
      results: [
        { ...chat, password_hash: 'argon2id$secret', workspaceId: 'internal', ownerEmail: 'a@example.com' },
        { ...chat, temperature: 0.3, is_public: true, token_hash: 'abc' },
      ],
    };
    const { status, body } = await serve(page, leaky);
    expect(status).toBe(200);
    for (const secret of ['password_hash', 'argon2id', 'workspaceId', 'ownerEmail', 'a@example.com', 'token_hash', 'total_internal']) {
      expect(body).not.toContain(secret);
    }
    expect(JSON.parse(body)).toEqual({
      count: 2,
      next: leaky.next,
      previous: null,
      results: [chat, { ...chat, temperature: 0.3, is_public: true }],
    });
  });

  it('keeps fields whose names are schema keywords (description, examples)', async () => {
    const schema = plainResponse(z.object({ description: z.string().describe('What it is.'), examples: z.array(z.string()) }));
    const { status, body } = await serve(schema, { description: 'A handbook', examples: ['one'], extra: 1 });
    expect(status).toBe(200);
    expect(JSON.parse(body)).toEqual({ description: 'A handbook', examples: ['one'] });
  });

  it('writes the same JSON value as the zod serializer for a well-formed body', async () => {
    const body = { count: 1, next: null, previous: null, results: [chat] };
    const fast = await serve(page, body);
    const zod = zodSerializerCompiler({ schema: paginated(chatOut), method: 'GET', url: '/' } as never)(body);
    expect(JSON.parse(fast.body)).toEqual(JSON.parse(zod));
  });

  it('keeps zod for unmarked schemas (a body that does not match still fails)', async () => {
    const unmarked = z.object({ n: z.number() });
    expect(JSON.parse((await serve(unmarked, { n: 1, secret: 's' })).body)).toEqual({ n: 1 });
    expect((await serve(unmarked, { n: 'one' })).status).toBe(500);
  });

  it('refuses to mark a schema whose output JSON Schema cannot say it all (a transform)', async () => {
    const transformed = plainResponse(z.object({ at: z.date().transform((d) => d.toISOString()) }));
    await expect(serve(transformed, { at: new Date() })).rejects.toThrow();
  });
});
