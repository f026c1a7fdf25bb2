import { parse, type PGlite, protocol, type QueryOptions, type Results } from '@electric-sql/pglite';

/** Named statements kept per instance at most; the oldest is closed to make room. */
const MAX_NAMED = 256;
/** Texts remembered as run once (a text is named the second time it runs); forgotten all at once when full. */
const MAX_SEEN = 1024;
/** SQLSTATE 0A000 "cached plan must not change result type": the schema changed under a named statement. */
const FEATURE_NOT_SUPPORTED = '0A000';

/** A prepared statement's name and its parameters' type ids. */
interface Named {
  name: string;
  types: number[];
}

/**
 * Runs PGlite's statements with parameters as named prepared statements, parsed and planned once
 * per text and instance (as node-postgres's named statements are on PostgreSQL). PGlite's own
 * `query` sends an unnamed statement every time, so each call was parsed, described and planned
 * again: ~2 ms of the chat list's ~8 ms (docs/decisions.md, "Hot paths"). A text is named the
 * second time it runs, so a one-off (a bulk insert of some number of rows) costs no more than
 * before. Same results and errors as `query` (its result parsing, its type serializers and
 * parsers); a statement without parameters, with a blob or with parameter types runs through
 * `query` unchanged.
 *
 * Only for statements outside a transaction, run one at a time (pglite-guard.ts's queue, which
 * also holds them back while a transaction is open): it uses PGlite's exclusive protocol access.
 */
export function nameStatements(client: PGlite): void {
  const unnamed = client.query.bind(client);
  const named = new Map<string, Named>();
  const seen = new Set<string>();
  let counter = 0;

  /** Prepares `text` under a new name, closing `stale` (an older name of it) or, when full, the oldest. */
  const prepare = async (text: string, stale?: string) => {
    const name = `pgl_${++counter}`;
    const parts: Uint8Array[] = [];
    if (stale) parts.push(protocol.serialize.close({ type: 'S', name: stale }));
    else if (named.size >= MAX_NAMED) {
      const [oldest, entry] = named.entries().next().value as [string, Named];
      named.delete(oldest);
      parts.push(protocol.serialize.close({ type: 'S', name: entry.name }));
    }
    parts.push(protocol.serialize.parse({ name, text }), protocol.serialize.describe({ type: 'S', name }), protocol.serialize.sync());
    const { messages } = await client.execProtocol(Buffer.concat(parts));
    const entry: Named = { name, types: parse.parseDescribeStatementResults(messages) };
    named.set(text, entry);
    return entry;
  };

  const run = async <T>(entry: Named, params: unknown[], options: QueryOptions | undefined): Promise<Results<T>> => {
    const values = params.map((param, i) => {
      if (param === null || param === undefined) return null;
      const type = entry.types[i]!;
      const serialize = options?.serializers?.[type] ?? client.serializers[type];
      return serialize ? serialize(param) : String(param);
    });
    const { messages } = await client.execProtocol(
      Buffer.concat([
        protocol.serialize.bind({ statement: entry.name, values }),
        protocol.serialize.describe({ type: 'P' }),
        protocol.serialize.execute({}),
        protocol.serialize.sync(),
      ]),
    );
    return parse.parseResults(messages, client.parsers, options)[0] as Results<T>;
  };

  client.query = (async <T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> => {
    if (!params || params.length === 0 || options?.blob || options?.paramTypes || client.closed) return unnamed<T>(text, params, options);
    if (!named.has(text) && !seen.has(text)) {
      if (seen.size >= MAX_SEEN) seen.clear();
      seen.add(text);
      return unnamed<T>(text, params, options);
    }
    seen.delete(text);
    return client.runExclusive(async () => {
      const entry = named.get(text) ?? (await prepare(text));
      try {
        return await run<T>(entry, params, options);
      } catch (error) {
        if ((error as { code?: unknown }).code !== FEATURE_NOT_SUPPORTED) throw error;
        // Prepared before the schema changed ("cached plan must not change result type"): again.
        named.delete(text);
        return run<T>(await prepare(text, entry.name), params, options);
      }
    });
  }) as typeof client.query;
}
