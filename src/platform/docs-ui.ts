import fastifySwagger, { type StaticDocumentSpec } from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** What static mode takes; its type knows OpenAPI 2 and 3.0 only, the object is passed as it is (ours is 3.2). */
type StaticDocument = StaticDocumentSpec['document'];

/** Headers of the docs app's answer that the main app sets itself for the bytes it sends. */
const HOP_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date']);

/**
 * The Swagger UI at `prefix` (`/api/docs/`, its `static/` assets, `json` and `yaml`), built at
 * its first request rather than at start-up: @fastify/swagger-ui and @fastify/static with their
 * modules took ~60 ms of every start (bench:start; issue 14 asks for /healthz within 1 s), for
 * a page few processes ever serve. It runs in a Fastify instance of its own, serving the main
 * app's OpenAPI document, and answers through the main app's routes (`inject`), so the main
 * app's hooks (request id, nosniff, CORS) and its JSON 404 apply as to any route.
 */
export function registerDocsUi(app: FastifyInstance, prefix: string): void {
  let docsApp: Promise<FastifyInstance> | undefined;
  async function build(): Promise<FastifyInstance> {
    const { default: fastifySwaggerUi } = await import('@fastify/swagger-ui');
    const docs = Fastify({ logger: false });
    await docs.register(fastifySwagger, { mode: 'static', specification: { document: app.swagger() as unknown as StaticDocument } });
    await docs.register(fastifySwaggerUi, { routePrefix: prefix });
    await docs.ready();
    return docs;
  }
  async function forward(request: FastifyRequest, reply: FastifyReply) {
    docsApp ??= build().catch((error: unknown) => {
      docsApp = undefined; // the next request tries again
      throw error;
    });
    // Always a GET: for a HEAD, Fastify runs this GET route and drops the body, keeping its length.
    const answer = await (await docsApp).inject({ method: 'GET', url: request.url, headers: request.headers });
    if (answer.statusCode === 404) return reply.callNotFound();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name)) reply.header(name, value);
    }
    // An empty answer (a redirect, a 304) is sent as one, without a content type of its own.
    return reply.code(answer.statusCode).send(answer.rawPayload.length ? answer.rawPayload : undefined);
  }
  app.get(prefix, { schema: { hide: true } }, forward);
  app.get(`${prefix}/*`, { schema: { hide: true } }, forward);
}
