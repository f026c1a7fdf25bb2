import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for the payment provider's API: the three endpoints the `stripe` SDK calls for
 * billing actions, with form-encoded bodies as the SDK sends them. Every request is recorded so
 * tests can assert what was sent (`form['metadata[workspace_id]']`, `form['line_items[0][price]']`).
 * Point the app at it with `STRIPE_API_BASE: fake.url` and any `STRIPE_SECRET_KEY`.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The decoded form body, keys as sent (`metadata[user_id]`). */
  form: Record<string, string>;
}

export interface FakePaymentApi {
  url: string;
  requests: RecordedRequest[];
  /** Requests to one path, for example `/v1/checkout/sessions`. */
  calls(path: string): RecordedRequest[];
  /** The next `times` requests to `path` answer `status` with a provider-style error. */
  failNext(path: string, status?: number, times?: number): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startFakePaymentApi(): Promise<FakePaymentApi> {
  const requests: RecordedRequest[] = [];
  const failures = new Map<string, { status: number; times: number }>();
  // Idempotency keys answer with the first response, as the provider does.
  const idempotent = new Map<string, unknown>();
  let sequence = 0;

  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_fake_${sequence}` });
    res.end(JSON.stringify(body));
  };

  const server = createServer((req, res) => {
    void (async () => {
      const body = await read(req);
      const path = (req.url ?? '/').split('?')[0]!;
      const form = Object.fromEntries(new URLSearchParams(body));
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, form });

      if (!/^Bearer \S+/.test(req.headers.authorization ?? '')) {
        return send(res, 401, { error: { type: 'invalid_request_error', message: 'No API key provided.' } });
      }
      const failure = failures.get(path);
      if (failure) {
        if (--failure.times <= 0) failures.delete(path);
        return send(res, failure.status, { error: { type: 'api_error', message: 'Injected failure.' } });
      }
      const key = req.headers['idempotency-key'];
      const cacheKey = typeof key === 'string' ? `${path} ${key}` : undefined;
      if (cacheKey && idempotent.has(cacheKey)) return send(res, 200, idempotent.get(cacheKey));

      sequence += 1;
      let answer: unknown;
      if (req.method === 'POST' && path === '/v1/customers') {
        answer = {
          id: `cus_fake${sequence}`,
          object: 'customer',
          email: form.email ?? null,
          name: form.name ?? null,
          metadata: { user_id: form['metadata[user_id]'] },
        };
      } else if (req.method === 'POST' && path === '/v1/checkout/sessions') {
        const id = `cs_test_fake${sequence}`;
        answer = {
          id,
          object: 'checkout.session',
          mode: form.mode,
          customer: form.customer,
          url: `https://checkout.fake-payments.test/c/pay/${id}`,
          metadata: { workspace_id: form['metadata[workspace_id]'] },
        };
      } else if (req.method === 'POST' && path === '/v1/billing_portal/sessions') {
        const id = `bps_fake${sequence}`;
        answer = {
          id,
          object: 'billing_portal.session',
          customer: form.customer,
          return_url: form.return_url,
          url: `https://billing.fake-payments.test/p/session/${id}`,
        };
      } else {
        return send(res, 404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${path}).` } });
      }
      if (cacheKey) idempotent.set(cacheKey, answer);
      send(res, 200, answer);
    })().catch((error: unknown) => send(res, 500, { error: { type: 'api_error', message: String(error) } }));
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    calls: (path) => requests.filter((r) => r.path === path),
    failNext: (path, status = 400, times = 1) => void failures.set(path, { status, times }),
    reset() {
      requests.length = 0;
      failures.clear();
      idempotent.clear();
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
