import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/*
 * A real HTTP server speaking the four rerank API shapes the reranker port knows. The first path
 * segment picks the shape, so one server stands in for every provider:
 *
 *   POST /cohere/v2/rerank, /jina/v1/rerank, /vllm/v1/rerank  {query, documents} → {results: [{index, relevance_score}]}
 *   POST /voyage/v1/rerank                                      {query, documents} → {data: [{index, relevance_score}]}
 *   POST /tei/rerank                                            {query, texts}     → [{index, score}]
 *
 * Point RERANK_BASE_URL at `baseUrl(shape)`. Scores come from `score` (default: the share of the
 * query's words found in the document); `fail` makes the next answers an HTTP 500, a hang, or
 * malformed JSON. Answers are sorted by score, highest first, as the real services do.
 */

export type RerankShape = 'cohere' | 'jina' | 'vllm' | 'voyage' | 'tei';
export type RerankFailure = 'status' | 'hang' | 'malformed' | null;

export interface RecordedRerank {
  shape: RerankShape;
  path: string;
  headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests index freely into bodies
  body: any;
}

export interface FakeReranker {
  url: string;
  baseUrl(shape: RerankShape): string;
  requests: RecordedRerank[];
  /** Relevance of `document` (its position in the request is `index`) to `query`. */
  score: (query: string, document: string, index: number, count: number) => number;
  fail: RerankFailure;
  reset(): void;
  close(): Promise<void>;
}

const paths: Record<string, RerankShape> = {
  '/cohere/v2/rerank': 'cohere',
  '/jina/v1/rerank': 'jina',
  '/vllm/v1/rerank': 'vllm',
  '/voyage/v1/rerank': 'voyage',
  '/tei/rerank': 'tei',
};

export const wordOverlap = (query: string, document: string) => {
  const words = query.toLowerCase().match(/\p{L}+/gu) ?? [];
  const text = document.toLowerCase();
  return words.length ? words.filter((w) => text.includes(w)).length / words.length : 0;
};

export async function startFakeReranker(): Promise<FakeReranker> {
  const sockets = new Set<Socket>();
  const fake: FakeReranker = {
    url: '',
    baseUrl: (shape) => `${fake.url}${{ cohere: '/cohere/v2', jina: '/jina/v1', vllm: '/vllm/v1', voyage: '/voyage/v1', tei: '/tei' }[shape]}`,
    requests: [],
    score: (query, document) => wordOverlap(query, document),
    fail: null,
    reset() {
      fake.requests.length = 0;
      fake.score = (query, document) => wordOverlap(query, document);
      fake.fail = null;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      const shape = paths[path];
      if (req.method !== 'POST' || !shape) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
        return;
      }
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a request body of any shape
      const body: any = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      fake.requests.push({ shape, path, headers: req.headers, body });
      if (fake.fail === 'hang') return; // never answers; the client gives up
      if (fake.fail === 'status') {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'internal error' }));
        return;
      }
      if (fake.fail === 'malformed') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: [{ index: 'first', score: 'high' }] }));
        return;
      }
      const documents: string[] = shape === 'tei' ? body.texts : body.documents;
      const ranked = documents
        .map((document, index) => ({ index, score: fake.score(body.query, document, index, documents.length) }))
        .sort((a, b) => b.score - a.score);
      const answer =
        shape === 'tei'
          ? ranked
          : shape === 'voyage'
            ? { object: 'list', data: ranked.map((r) => ({ index: r.index, relevance_score: r.score })), model: body.model, usage: { total_tokens: 10 } }
            : { id: 'rerank-1', model: body.model, results: ranked.map((r) => ({ index: r.index, relevance_score: r.score })), usage: { total_tokens: 10 } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
