import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { isUndocumentedRoute, openApiPath, routeKey } from '../../src/platform/openapi.js';

/*
 * "Every status a route answered in the suite's own runs is documented for it." Each worker
 * process appends what its apps answered (`METHOD /route status`, each once) to its own file in
 * the run's directory and writes the document of each kind of app it built; after every file has run, the
 * global setup's teardown (global-setup.ts) compares the union with the documents. One file per
 * process and nothing read before the end: no race between parallel workers.
 */

const seen = new Set<string>();
/** The route sets whose document this process wrote (an app of another configuration may have more routes). */
const documented = new Set<string>();

const observationsFile = (dir: string) => path.join(dir, `responses-${process.pid}.log`);

/** Installs the recorder on a test app (before `ready`). */
export function recordResponses(app: FastifyInstance, dir: string): void {
  mkdirSync(dir, { recursive: true });
  app.addHook('onResponse', async (request, reply) => {
    const url = request.routeOptions.url;
    if (!url) return; // no route matched: the 404 of an unknown path belongs to no operation
    const line = `${routeKey(request.method, url)} ${reply.statusCode}`;
    if (seen.has(line)) return;
    seen.add(line);
    appendFileSync(observationsFile(dir), `${line}\n`);
  });
}

/** Writes the document of the app once per distinct set of routes (local or S3 storage, say) in this process. */
export function writeDocumentOnce(app: FastifyInstance, dir: string): void {
  const routes = createHash('sha256').update([...app.registeredRoutes].sort().join('\n')).digest('hex').slice(0, 16);
  if (documented.has(routes)) return;
  documented.add(routes);
  writeFileSync(path.join(dir, `openapi-${process.pid}-${routes}.json`), JSON.stringify(app.swagger()));
}

type Operation = { responses?: Record<string, unknown> };
type Document = { paths?: Record<string, Record<string, Operation>> };

/**
 * The statuses answered but not documented, as readable lines (empty when all are). A route
 * that is not in the document at all is reported too, unless it is an infrastructure route.
 */
export function undocumentedStatuses(dir: string): string[] {
  let files: string[];
  try {
    files = readdirSync(dir);
  } catch {
    return [];
  }
  const documents = files
    .filter((name) => name.startsWith('openapi-'))
    .map((name) => JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as Document);
  if (!documents.length) return [];
  const observed = new Set(
    files
      .filter((name) => name.startsWith('responses-'))
      .flatMap((name) => readFileSync(path.join(dir, name), 'utf8').split('\n').filter(Boolean)),
  );
  const problems: string[] = [];
  for (const line of [...observed].sort()) {
    const [method, url, status] = line.split(' ') as [string, string, string];
    if (isUndocumentedRoute(routeKey(method, url))) continue;
    const operations = documents
      .map((document) => document.paths?.[openApiPath(url)]?.[method.toLowerCase()])
      .filter((operation): operation is Operation => operation !== undefined);
    if (!operations.length) problems.push(`${method} ${url}: answered ${status}, but the route is not in the document`);
    else if (!operations.some((operation) => operation.responses?.[status])) {
      problems.push(`${method} ${url}: answered ${status}, not documented (documented: ${Object.keys(operations[0]!.responses ?? {}).join(', ')})`);
    }
  }
  return problems;
}
