import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type FieldErrors, ValidationError } from './errors.js';

/**
 * The input gate: the one place where every string that enters the service is checked for the
 * two things no layer behind it can store or process safely.
 *
 * - NUL (U+0000): PostgreSQL refuses it in `text` and `jsonb`, so a NUL that got through failed
 *   in the database (a 500 whose log held the statement and its parameters).
 * - Lone UTF-16 surrogates (U+D800..U+DFFF not in a pair): not Unicode text; they turn into U+FFFD
 *   or fail on the way to the database, the search index or a model provider.
 *
 * Both are 400 `validation_error` naming the field. `registerInputGate` checks the body, query,
 * path parameters and headers of every request of every route (a root preValidation hook, so a
 * new route cannot forget it); the multipart reader (`multipart.ts`) checks field names, values
 * and file names as parts arrive; the payment webhook checks its payload after the signature.
 */

export const NUL_MESSAGE = 'Null characters are not allowed.';
export const SURROGATE_MESSAGE = 'Unpaired surrogate characters are not allowed.';
const KEY_MESSAGE = 'Field names must not contain null characters or unpaired surrogates.';

// Fast pre-check: most strings have neither, and this is one scan.
const SUSPECT = /[\0\uD800-\uDFFF]/;
// In a `u` regex a well-formed pair is one code point, so \p{Cs} matches only a lone surrogate.
const LONE_SURROGATE = /\p{Cs}/u;

/** What is wrong with `text`, if anything. */
export function textProblem(text: string): string | undefined {
  if (!SUSPECT.test(text)) return undefined;
  if (text.includes('\0')) return NUL_MESSAGE;
  if (LONE_SURROGATE.test(text)) return SURROGATE_MESSAGE;
  return undefined;
}

/** At most this many fields are named in one answer. */
const MAX_FIELDS = 20;
const SAFE_KEY = /^[\w.\-[\]$@]{1,64}$/;

/** A path component as it may appear in a field name: never a long or odd key echoed back. */
function showKey(key: string | number): string {
  if (typeof key === 'number') return String(key);
  return SAFE_KEY.test(key) ? key : '*';
}

function fieldName(path: Array<string | number>): string {
  return path.length ? path.map(showKey).join('.') : 'non_field_errors';
}

/**
 * Plain data: arrays and objects without a class (`{}`, `Object.create(null)`, and the query
 * parser's objects, whose prototype is itself a null-prototype object).
 */
function isPlainContainer(value: object): boolean {
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === null || proto === Object.prototype || Object.getPrototypeOf(proto) === null;
}

/** A node of the walk; the path is rebuilt from the parents only when something is reported. */
interface Pending {
  value: unknown;
  key: string | number | undefined;
  parent: Pending | undefined;
}

function pathOf(node: Pending | undefined, prefix: Array<string | number>): Array<string | number> {
  const keys: Array<string | number> = [];
  for (let current = node; current && current.key !== undefined; current = current.parent) keys.push(current.key);
  return [...prefix, ...keys.reverse()];
}

/**
 * Every bad string in `value` (a JSON-like tree: strings, plain objects, arrays), with the dotted
 * path of its field. Keys are checked as well as values. Buffers, streams and other objects are
 * not text and are left to their consumers. Iterative and linear, so a deeply nested body can
 * neither overflow the stack nor cost more than its size.
 */
export function findTextProblems(value: unknown, prefix: Array<string | number> = []): FieldErrors {
  const errors: FieldErrors = {};
  let count = 0;
  const add = (node: Pending | undefined, message: string) => {
    const field = fieldName(pathOf(node, prefix));
    if (!errors[field]) {
      if (count >= MAX_FIELDS) return;
      count += 1;
      errors[field] = [];
    }
    if (!errors[field].includes(message)) errors[field].push(message);
  };
  const pending: Pending[] = [{ value, key: undefined, parent: undefined }];
  while (pending.length && count < MAX_FIELDS) {
    const node = pending.pop()!;
    const current = node.value;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) add(node, problem);
      continue;
    }
    if (!current || typeof current !== 'object' || !isPlainContainer(current)) continue;
    if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index -= 1) pending.push({ value: current[index], key: index, parent: node });
      continue;
    }
    const keys = Object.keys(current);
    for (let index = keys.length - 1; index >= 0; index -= 1) {
      const key = keys[index]!;
      if (textProblem(key)) {
        add(node, KEY_MESSAGE);
        continue;
      }
      pending.push({ value: (current as Record<string, unknown>)[key], key, parent: node });
    }
  }
  return errors;
}

/** Where the input came from, as in the validator's own messages ("Invalid input in body."). */
export type InputPart = 'body' | 'querystring' | 'params' | 'headers';

/** The 400 for bad text in `part`; the same shape as a schema validation failure. */
export function textProblemError(part: InputPart | string, errors: FieldErrors): ValidationError {
  return new ValidationError(`Invalid input in ${part}.`, errors);
}

/** Throws the 400 when `value` holds a NUL or a lone surrogate anywhere. */
export function assertCleanText(value: unknown, part: InputPart | string = 'body', prefix: Array<string | number> = []): void {
  const errors = findTextProblems(value, prefix);
  if (Object.keys(errors).length) throw textProblemError(part, errors);
}

/** Checks one request: path parameters first (they select the resource), then query, headers, body. */
export function checkRequestText(request: FastifyRequest): void {
  assertCleanText(request.params, 'params');
  assertCleanText(request.query, 'querystring');
  assertCleanText(request.headers, 'headers');
  // A raw body (Buffer, stream) is checked by the route that parses it (the webhook does so after
  // its signature check); multipart bodies are null here and are checked part by part.
  assertCleanText(request.body, 'body');
}

/**
 * Installs the gate for every route of `app` (call it on the root instance before any route is
 * registered). preValidation runs after parsing and authentication, before schema validation and
 * before any handler, idempotency key or service sees the input.
 */
export function registerInputGate(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    checkRequestText(request);
  });
}
