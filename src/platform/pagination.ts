import type { FastifyRequest } from 'fastify';
import { z } from 'zod';

/** `?limit=&offset=` of every paginated list: default 50, at most 200. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
});
export type PageQuery = z.output<typeof pageQuery>;

/** What a service returns for one page of a list. */
export interface PageResult<T> {
  count: number;
  results: T[];
}

function pageOf<T extends z.ZodType>(item: T) {
  return z.object({
    count: z.number().int(),
    next: z.url().nullable(),
    previous: z.url().nullable(),
    results: z.array(item),
  });
}

const pages = new WeakMap<z.ZodType, ReturnType<typeof pageOf>>();

/**
 * The response schema of a paginated list of `item`: one instance per item schema, named
 * `<Item>Page` in the OpenAPI document when the item is named (so clients get a type for it).
 */
export function paginated<T extends z.ZodType>(item: T) {
  const known = pages.get(item);
  if (known) return known as ReturnType<typeof pageOf<T>>;
  const page = pageOf(item);
  pages.set(item, page);
  const meta = z.globalRegistry.get(item);
  if (meta?.id && !z.globalRegistry.has(page)) {
    const example = (meta.examples as unknown[] | undefined)?.[0];
    z.globalRegistry.add(page, {
      id: `${meta.id}Page`,
      description: `One page of ${meta.id} objects (\`?limit=&offset=\`), with links to the next and previous pages.`,
      ...(example === undefined
        ? {}
        : { examples: [{ count: 1, next: null, previous: null, results: [example] }] }),
    });
  }
  return page;
}

function pageUrl(request: FastifyRequest, limit: number, offset: number): string {
  const url = new URL(request.url, `${request.protocol}://${request.host}`);
  url.searchParams.set('limit', String(limit));
  if (offset > 0) url.searchParams.set('offset', String(offset));
  else url.searchParams.delete('offset');
  return url.toString();
}

/** Wraps one page in the `{count, next, previous, results}` envelope with absolute links. */
export function toPage<T>(request: FastifyRequest, query: PageQuery, page: PageResult<T>) {
  const { limit, offset } = query;
  return {
    count: page.count,
    next: offset + limit < page.count ? pageUrl(request, limit, offset + limit) : null,
    previous: offset > 0 ? pageUrl(request, limit, Math.max(0, offset - limit)) : null,
    results: page.results,
  };
}
