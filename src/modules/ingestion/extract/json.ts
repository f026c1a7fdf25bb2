/** JSON: flattened to `path: value` lines. */
import { decodeText, readTextBytes, singlePage } from './decode.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';

function jsonKey(parent: string, key: string): string {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return parent ? `${parent}.${key}` : key;
  return `${parent}[${JSON.stringify(key)}]`;
}

function jsonScalar(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null) return 'null';
  return String(value);
}

/**
 * One line per leaf: `orders[0].customer.name: Ada`. Empty objects and arrays appear as `{}`
 * and `[]`; a top-level scalar is just its value. Iterative, so deep nesting cannot overflow
 * the stack; stops once `budget` characters have been produced.
 */
function flattenJson(root: unknown, budget: number): { text: string; clipped: boolean } {
  const lines: string[] = [];
  let size = 0;
  const stack: Array<[string, unknown]> = [['', root]];
  while (stack.length > 0) {
    if (size > budget) return { text: lines.join('\n'), clipped: true };
    const [path, value] = stack.pop()!;
    let line: string | undefined;
    if (Array.isArray(value)) {
      if (value.length === 0) line = `${path}: []`;
      for (let i = value.length - 1; i >= 0; i--) stack.push([`${path}[${i}]`, value[i]]);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      if (entries.length === 0) line = `${path}: {}`;
      for (let i = entries.length - 1; i >= 0; i--) stack.push([jsonKey(path, entries[i]![0]), entries[i]![1]]);
    } else {
      line = path ? `${path}: ${jsonScalar(value)}` : jsonScalar(value);
    }
    if (line !== undefined) {
      if (line.startsWith(': ')) line = line.slice(2); // empty container at the top level
      lines.push(line);
      size += line.length + 1;
    }
  }
  return { text: lines.join('\n'), clipped: false };
}

export function extractJson(bytes: Buffer, charset: string | undefined, limits: ExtractionLimits): ExtractedDocument {
  if (bytes.length > limits.maxJsonBytes) {
    // Too big to parse safely: read it as (bounded) text instead.
    const { bytes: kept, cut } = readTextBytes(bytes, limits.maxTextBytes);
    return singlePage(decodeText(kept, charset), limits, cut);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(decodeText(bytes, charset));
  } catch (error) {
    throw new ExtractionError(
      'invalid_json',
      'This JSON file could not be read because it is not valid JSON.',
      `invalid JSON: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const { text, clipped } = flattenJson(parsed, limits.maxChars);
  return singlePage(text, limits, clipped);
}
