import type { FastifySerializerCompiler } from 'fastify/types/schema.js';
import fastJson from 'fast-json-stringify';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

/**
 * Response serialisation. By default a response goes through its zod schema (encoded, so unknown
 * keys are stripped and a body that does not match fails with a 500), then JSON.stringify. On hot
 * routes that costs more than the route's own work; a response schema marked with
 * `plainResponse()` is instead compiled once, from its JSON Schema, by fast-json-stringify (what
 * Fastify uses for JSON Schema routes): it writes only the schema's properties, in one pass.
 *
 * Only for plain schemas: the output JSON Schema must say all of it (no transform, codec, refine
 * or default whose effect a serialiser would have to apply), and the handler must build the body
 * to the schema (fast-json-stringify does not validate: it coerces a mistyped value instead of
 * failing). A schema zod cannot represent throws when the route is compiled, at start-up.
 */
const plain = new WeakSet<z.ZodType>();

/** Marks a response schema as plain (see above); returns it unchanged, so the OpenAPI document is the same. */
export function plainResponse<T extends z.ZodType>(schema: T): T {
  plain.add(schema);
  return schema;
}

type JsonSchema = { [key: string]: unknown };

const mapValues = (object: JsonSchema, map: (value: unknown) => unknown): JsonSchema =>
  Object.fromEntries(Object.entries(object).map(([key, value]) => [key, map(value)]));

/**
 * `anyOf: [X, {type: 'null'}]` (zod's `.nullable()`) as `type: [X's type, 'null']`, which
 * fast-json-stringify writes directly instead of testing each branch against the value.
 */
function simplify(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(simplify);
  if (!node || typeof node !== 'object') return node;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node as JsonSchema)) {
    // Documentation only; fast-json-stringify does not need it.
    if (key === 'examples' || key === 'description' || key === '$schema') continue;
    // Property names are data, not keywords: a field called `description` stays.
    out[key] = key === 'properties' || key === 'patternProperties' ? mapValues(value as JsonSchema, simplify) : simplify(value);
  }
  const anyOf = out.anyOf as JsonSchema[] | undefined;
  if (anyOf?.length === 2 && anyOf.some((s) => s.type === 'null' && Object.keys(s).length === 1)) {
    const other = anyOf.find((s) => !(s.type === 'null' && Object.keys(s).length === 1))!;
    if (typeof other.type === 'string' && other.type !== 'object' && other.type !== 'array') {
      delete out.anyOf;
      return { ...out, ...other, type: [other.type, 'null'] };
    }
  }
  return out;
}

/** The JSON Schema fast-json-stringify compiles for a plain zod response schema. */
export function responseJsonSchema(schema: z.ZodType): JsonSchema {
  return simplify(z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'throw' })) as JsonSchema;
}

/** The app's serializer compiler: fast-json-stringify for schemas marked plain, zod for the rest. */
export const serializerCompiler: FastifySerializerCompiler<z.ZodType | { properties: z.ZodType }> = (route) => {
  const schema = route.schema;
  if (plain.has(schema as z.ZodType)) return fastJson(responseJsonSchema(schema as z.ZodType) as unknown as Parameters<typeof fastJson>[0]);
  return zodSerializerCompiler(route as Parameters<typeof zodSerializerCompiler>[0]);
};
