import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type ResolvedAddress,
  type Resolver,
  type SafeFetcherOptions,
  UrlFetchError,
  type UrlRefusalReason as Reason,
  UrlNotAllowedError,
  createSafeFetcher,
} from './fetcher.js';

// Everything runs against local servers; host names are made up and resolved by an injected
// resolver, so no test ever reaches the real network or the system resolver.

interface TestServer {
  port: number;
  requests: number;
  connections: number;
  close(): Promise<void>;
}

async function listen(server: http.Server, host: string, port = 0): Promise<TestServer> {
  const counters = { requests: 0, connections: 0 };
  server.on('request', () => (counters.requests += 1));
  server.on('connection', () => (counters.connections += 1));
  server.on('secureConnection', () => (counters.connections += 1));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    get requests() {
      return counters.requests;
    },
    get connections() {
      return counters.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Listens where it can; null when the address is unavailable here (no IPv6, no 127.0.0.2). */
async function tryListen(server: http.Server, host: string, port: number): Promise<TestServer | null> {
  try {
    return await listen(server, host, port);
  } catch {
    return null;
  }
}

/** A server that must never be reached: it counts connections and requests. */
const canaryServer = () => http.createServer((_req, res) => res.end('canary reached'));

/** The "remote web" for the positive cases and the redirector for the negative ones. */
function appServer() {
  return http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const route = url.pathname;
    if (route === '/hello') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-Test': 'Yes' });
      res.end('hello');
    } else if (route === '/headers') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, headers: req.headers }));
    } else if (route.startsWith('/r/')) {
      res.writeHead(Number(route.slice(3)), { location: url.searchParams.get('to') ?? '/' });
      res.end('moved');
    } else if (route === '/no-location') {
      res.writeHead(302);
      res.end('nowhere');
    } else if (route === '/loop') {
      res.writeHead(302, { location: '/loop' });
      res.end();
    } else if (route.startsWith('/chain/')) {
      const left = Number(route.slice(7));
      if (left > 0) res.writeHead(302, { location: `/chain/${left - 1}` }).end();
      else res.writeHead(200).end('end of chain');
    } else if (route === '/sized') {
      const size = Number(url.searchParams.get('n'));
      res.writeHead(200, { 'content-length': String(size) });
      res.end(Buffer.alloc(size, 'a'));
    } else if (route === '/chunked') {
      const size = Number(url.searchParams.get('n'));
      res.writeHead(200, { 'content-type': 'text/plain' });
      let sent = 0;
      const pump = () => {
        if (res.destroyed) return;
        if (sent >= size) return void res.end();
        const chunk = Buffer.alloc(Math.min(256, size - sent), 'b');
        sent += chunk.length;
        res.write(chunk);
        setImmediate(pump);
      };
      pump();
    } else if (route === '/gzip') {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
      res.end(gzipSync('<p>compressed</p>'));
    } else if (route === '/br') {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br' });
      res.end(brotliCompressSync('<p>brotli</p>'));
    } else if (route === '/deflate' || route === '/deflate-raw') {
      res.writeHead(200, { 'content-encoding': 'deflate' });
      res.end(route === '/deflate' ? deflateSync('zlib deflate') : deflateRawSync('raw deflate'));
    } else if (route === '/unknown-encoding') {
      res.writeHead(200, { 'content-encoding': 'zstd' });
      res.end('????');
    } else if (route === '/bomb') {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(gzipSync(Buffer.alloc(1024 * 1024)));
    } else if (route === '/status/404') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('missing');
    } else if (route === '/hang') {
      // Never answers; the fetcher's deadline has to end it.
    } else if (route === '/stall-body') {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
    } else {
      res.writeHead(404).end();
    }
  });
}

function makeResolver(table: Record<string, string[] | ((call: number) => string[])>) {
  const calls: Record<string, number> = {};
  const resolver: Resolver = async (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    calls[name] = (calls[name] ?? 0) + 1;
    const entry = table[name];
    if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const answers = typeof entry === 'function' ? entry(calls[name]) : entry;
    return answers.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolver, calls };
}

// Started at load time (top-level await): the tables below are built while tests are collected
// and need the real ports.
const canary = await listen(canaryServer(), '127.0.0.1');
const P = canary.port; // canary port
const canary6 = await tryListen(canaryServer(), '::1', P);
const app = await listen(appServer(), '127.0.0.1');
const R = app.port; // app and redirector port

const canaryHits = () => canary.requests + canary.connections + (canary6 ? canary6.requests + canary6.connections : 0);

const dnsTable = () => ({
  'redirector.test': ['127.0.0.1'],
  'app.test': ['127.0.0.1'],
  'app2.test': ['127.0.0.1'],
  'canary.test': ['127.0.0.1'],
  'v6loop.test': ['::1'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'mixed.test': ['93.184.216.34', '127.0.0.1'],
  'private.test': ['10.1.2.3'],
  'meta.test': ['169.254.169.254'],
  'meta6.test': ['fd00:ec2::254'],
  'zero.test': ['0.0.0.0'],
  'garbage.test': ['not-an-ip'],
  localhost: ['127.0.0.1'],
});

function fetcher(options: Partial<SafeFetcherOptions> = {}) {
  const dns = makeResolver(dnsTable());
  return {
    ...createSafeFetcher({ allowedPrivateHosts: [], resolver: dns.resolver, ...options }),
    calls: dns.calls,
  };
}

async function refusal(promise: Promise<unknown>): Promise<UrlNotAllowedError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the fetch to be refused, but it succeeded');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UrlNotAllowedError);
  const refused = error as UrlNotAllowedError;
  expect(refused.code).toBe('url_not_allowed');
  expect(refused.status).toBe(400);
  return refused;
}

async function failure(promise: Promise<unknown>, code: string): Promise<UrlFetchError> {
  const error = await promise.then(
    () => {
      throw new Error(`expected ${code}, but the fetch succeeded`);
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UrlFetchError);
  expect((error as UrlFetchError).code).toBe(code);
  expect((error as UrlFetchError).status).toBe(422);
  return error as UrlFetchError;
}

afterAll(async () => {
  await Promise.all([canary.close(), canary6?.close(), app.close()]);
});

describe('refused URLs never reach the network', () => {
  const direct = (): Array<[string, string, Reason]> => [
    // loopback, every notation
    ['loopback dotted', `http://127.0.0.1:${P}/`, 'address'],
    ['loopback other /8 address', `http://127.255.255.254:${P}/`, 'address'],
    ['loopback short 127.1', `http://127.1:${P}/`, 'address'],
    ['loopback short 127.0.1', `http://127.0.1:${P}/`, 'address'],
    ['loopback decimal', `http://2130706433:${P}/`, 'address'],
    ['loopback octal', `http://0177.0.0.1:${P}/`, 'address'],
    ['loopback octal long', `http://017700000001:${P}/`, 'address'],
    ['loopback hex dotted', `http://0x7f.0.0.1:${P}/`, 'address'],
    ['loopback hex long', `http://0x7f000001:${P}/`, 'address'],
    ['loopback zero-padded', `http://127.000.000.001:${P}/`, 'address'],
    ['loopback percent-encoded', `http://%31%32%37.0.0.1:${P}/`, 'address'],
    ['loopback trailing dot', `http://127.0.0.1.:${P}/`, 'address'],
    ['loopback https', `https://127.0.0.1:${P}/`, 'address'],
    ['IPv6 loopback', `http://[::1]:${P}/`, 'address'],
    ['IPv6 loopback long form', `http://[0:0:0:0:0:0:0:1]:${P}/`, 'address'],
    ['IPv4-mapped loopback', `http://[::ffff:127.0.0.1]:${P}/`, 'address'],
    ['IPv4-mapped loopback hex', `http://[::ffff:7f00:1]:${P}/`, 'address'],
    ['IPv4-mapped loopback long form', `http://[0:0:0:0:0:ffff:127.0.0.1]:${P}/`, 'address'],
    ['IPv4-compatible loopback', `http://[::127.0.0.1]:${P}/`, 'address'],
    ['IPv4-translated loopback', `http://[::ffff:0:127.0.0.1]:${P}/`, 'address'],
    ['NAT64 loopback', `http://[64:ff9b::127.0.0.1]:${P}/`, 'address'],
    ['6to4 loopback', `http://[2002:7f00:1::]:${P}/`, 'address'],
    // names for the local host
    ['localhost', `http://localhost:${P}/`, 'host_name'],
    ['LOCALHOST', `http://LOCALHOST:${P}/`, 'host_name'],
    ['localhost trailing dot', `http://localhost.:${P}/`, 'host_name'],
    ['localhost two trailing dots', `http://localhost..:${P}/`, 'host_name'],
    ['subdomain of localhost', `http://foo.localhost:${P}/`, 'host_name'],
    ['deep subdomain of localhost', `http://a.b.LocalHost.:${P}/`, 'host_name'],
    ['single-label host', `http://intranet:${P}/`, 'host_name'],
    ['.internal name', 'http://metadata.google.internal/computeMetadata/v1/', 'host_name'],
    ['.local name', `http://printer.local:${P}/`, 'host_name'],
    // unspecified
    ['0.0.0.0', `http://0.0.0.0:${P}/`, 'address'],
    ['http://0/', `http://0:${P}/`, 'address'],
    ['0x0', `http://0x0:${P}/`, 'address'],
    ['IPv6 unspecified', `http://[::]:${P}/`, 'address'],
    // private, shared and link-local
    ['10/8', 'http://10.0.0.1/', 'address'],
    ['172.16/12 low', 'http://172.16.0.1/', 'address'],
    ['172.16/12 high', 'http://172.31.255.255/', 'address'],
    ['192.168/16', 'http://192.168.1.1/', 'address'],
    ['carrier-grade NAT', 'http://100.64.0.1/', 'address'],
    ['IPv4-mapped private', 'http://[::ffff:10.0.0.1]/', 'address'],
    ['link-local', 'http://169.254.1.1/', 'address'],
    ['IPv6 link-local', 'http://[fe80::1]/', 'address'],
    // cloud metadata
    ['metadata', 'http://169.254.169.254/latest/meta-data/', 'address'],
    ['metadata trailing dot', 'http://169.254.169.254./latest/meta-data/', 'address'],
    ['metadata hex', 'http://0xa9fea9fe/', 'address'],
    ['metadata decimal', 'http://2852039166/', 'address'],
    ['metadata IPv4-mapped', 'http://[::ffff:169.254.169.254]/', 'address'],
    ['metadata IPv6 (AWS)', 'http://[fd00:ec2::254]/latest/meta-data/', 'address'],
    ['metadata ECS', 'http://169.254.170.2/v2/credentials', 'address'],
    // IPv6 private
    ['unique-local fc00', 'http://[fc00::1]/', 'address'],
    ['unique-local fd', 'http://[fd12:3456:789a::1]/', 'address'],
    ['site-local', 'http://[fec0::1]/', 'address'],
    ['teredo', 'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'address'],
    ['IPv6 multicast', 'http://[ff02::1]/', 'address'],
    ['IPv6 documentation', 'http://[2001:db8::1]/', 'address'],
    // other special IPv4 ranges
    ['multicast', 'http://224.0.0.1/', 'address'],
    ['broadcast', 'http://255.255.255.255/', 'address'],
    ['reserved 240/4', 'http://240.0.0.1/', 'address'],
    ['benchmarking', 'http://198.18.0.1/', 'address'],
    ['IETF protocol assignments', 'http://192.0.0.1/', 'address'],
    ['documentation TEST-NET-1', 'http://192.0.2.1/', 'address'],
    ['documentation TEST-NET-3', 'http://203.0.113.7/', 'address'],
    // user info tricks
    ['userinfo before loopback', `http://example.com@127.0.0.1:${P}/`, 'userinfo'],
    ['fragment with @', `http://127.0.0.1:${P}#@example.com/`, 'address'],
    ['user and password', 'http://user:pass@example.com/', 'userinfo'],
    ['user only', 'http://user@example.com/', 'userinfo'],
    ['password only', 'http://:pass@example.com/', 'userinfo'],
    ['userinfo to allowed host', `http://user:pw@redirector.test:${R}/hello`, 'userinfo'],
    // schemes
    ['file', 'file:///etc/passwd', 'scheme'],
    ['ftp', 'ftp://example.com/file', 'scheme'],
    ['gopher', `gopher://127.0.0.1:${P}/_GET%20/`, 'scheme'],
    ['data', 'data:text/plain,hello', 'scheme'],
    ['javascript', 'javascript:alert(1)', 'scheme'],
    ['ws', 'ws://example.com/socket', 'scheme'],
    ['wss', 'wss://example.com/socket', 'scheme'],
    ['dict', `dict://127.0.0.1:${P}/info`, 'scheme'],
    // malformed
    ['empty', '', 'invalid_url'],
    ['not a URL', 'not a url', 'invalid_url'],
    ['no host', 'http://', 'invalid_url'],
    ['relative', '/etc/passwd', 'invalid_url'],
    ['over 2048 characters', `http://example.com/${'a'.repeat(2100)}`, 'too_long'],
    ['port 0', 'http://example.com:0/', 'port'],
    // names that resolve somewhere internal (injected DNS)
    ['name resolving to loopback', `http://canary.test:${P}/`, 'address'],
    ['name resolving to IPv6 loopback', `http://v6loop.test:${P}/`, 'address'],
    ['name resolving to IPv4-mapped loopback', `http://mapped.test:${P}/`, 'address'],
    ['name resolving to public and loopback', `http://mixed.test:${P}/`, 'address'],
    ['name resolving to private', 'http://private.test/', 'address'],
    ['name resolving to metadata', 'http://meta.test/', 'address'],
    ['name resolving to IPv6 metadata', 'http://meta6.test/', 'address'],
    ['name resolving to 0.0.0.0', `http://zero.test:${P}/`, 'address'],
    ['name resolving to garbage', `http://garbage.test:${P}/`, 'address'],
  ];

  it('has a big enough table, built with the real ports', () => {
    expect(direct().length).toBeGreaterThanOrEqual(60);
    expect(JSON.stringify([direct(), targets()])).not.toContain('undefined');
  });

  it.each(direct())('refuses %s (%s)', async (_label, url, reason) => {
    const f = fetcher({ allowedPrivateHosts: ['redirector.test'] });
    const error = await refusal(f.fetch(url));
    expect(error.reason).toBe(reason);
    expect(canaryHits()).toBe(0);
  });

  const targets = (): Array<[string, string, Reason]> => [
    ['loopback literal', `http://127.0.0.1:${P}/`, 'address'],
    ['scheme-relative loopback', `//127.0.0.1:${P}/`, 'address'],
    ['decimal loopback', `http://2130706433:${P}/`, 'address'],
    ['localhost', `http://localhost:${P}/`, 'host_name'],
    ['IPv6 loopback', `http://[::1]:${P}/`, 'address'],
    ['IPv4-mapped loopback', `http://[::ffff:127.0.0.1]:${P}/`, 'address'],
    ['metadata', 'http://169.254.169.254/latest/meta-data/', 'address'],
    ['name resolving to loopback', `http://canary.test:${P}/`, 'address'],
    ['name resolving to public and loopback', `http://mixed.test:${P}/`, 'address'],
    ['file scheme', 'file:///etc/passwd', 'scheme'],
    ['userinfo on the allowed host', `http://user:pw@redirector.test:${R}/hello`, 'userinfo'],
  ];
  const redirects = () =>
    [301, 302, 303, 307, 308].flatMap((status) =>
      targets().map(([label, to, reason]): [number, string, string, Reason] => [status, label, to, reason]),
    );

  it.each(redirects())('refuses a %i redirect to %s (%s)', async (status, _label, to, reason) => {
    const f = fetcher({ allowedPrivateHosts: ['redirector.test'] });
    const before = app.requests;
    const error = await refusal(f.fetch(`http://redirector.test:${R}/r/${status}?to=${encodeURIComponent(to)}`));
    expect(error.reason).toBe(reason);
    expect(error.detail).toMatch(/^The URL redirects to /);
    expect(app.requests).toBe(before + 1); // the redirector itself was reached
    expect(canaryHits()).toBe(0);
  });

  it('says why without naming a resolved address', async () => {
    const f = fetcher();
    const error = await refusal(f.fetch(`http://canary.test:${P}/`));
    expect(error.reason).toBe('address');
    expect(error.detail).toBe('The host canary.test resolves to a loopback address, which is not allowed.');
    expect(error.detail).not.toContain('127.0.0.1');
    const scheme = await refusal(f.fetch('file:///etc/passwd'));
    expect(scheme.reason).toBe('scheme');
    expect(scheme.detail).toBe('The URL must use http or https.');
  });

  it('refuses statically refusable URLs without asking DNS', async () => {
    const f = fetcher();
    await refusal(f.fetch('http://user:pass@example.com/'));
    await refusal(f.fetch(`http://localhost:${P}/`));
    expect(f.calls).toEqual({});
  });
});

describe('DNS is resolved once per hop and the connection is pinned', () => {
  it('connects to the checked address even when the name changes its answer (127.0.0.2 vs canary)', async (ctx) => {
    // A server on 127.0.0.2 with the canary's port: the operator allows 127.0.0.2 only.
    const good = await tryListen(
      http.createServer((_req, res) => res.end('pinned')),
      '127.0.0.2',
      P,
    );
    if (!good) return ctx.skip();
    try {
      const connects: Array<{ address: string }> = [];
      const dns = makeResolver({ 'rebind.test': (call) => (call === 1 ? ['127.0.0.2'] : ['127.0.0.1']) });
      const f = createSafeFetcher({
        allowedPrivateHosts: ['127.0.0.2/32'],
        resolver: dns.resolver,
        onConnect: (e) => connects.push(e),
      });
      const response = await f.fetch(`http://rebind.test:${P}/`);
      expect(response.body.toString()).toBe('pinned');
      expect(dns.calls['rebind.test']).toBe(1);
      expect(connects).toEqual([{ hostname: 'rebind.test', address: '127.0.0.2', port: P }]);
      expect(good.requests).toBe(1);
      expect(canaryHits()).toBe(0);
    } finally {
      await good.close();
    }
  });

  it('connects to the public answer it checked, not to a later loopback answer', async () => {
    const connects: Array<{ address: string; port: number }> = [];
    const dns = makeResolver({ 'flip.test': (call) => (call === 1 ? ['93.184.216.34'] : ['127.0.0.1']) });
    const stop = new AbortController();
    const f = createSafeFetcher({
      allowedPrivateHosts: [],
      resolver: dns.resolver,
      // Stop as soon as the connection is attempted: no packet has to leave this machine.
      onConnect: (e) => {
        connects.push(e);
        stop.abort(new Error('stopped by test'));
      },
    });
    await expect(f.fetch(`http://flip.test:${P}/`, { signal: stop.signal })).rejects.toThrow('stopped by test');
    expect(dns.calls['flip.test']).toBe(1);
    expect(connects.map((c) => c.address)).toEqual(['93.184.216.34']);
    expect(canaryHits()).toBe(0);
  });

  it('refuses a name when any one of its answers is private', async () => {
    const f = fetcher();
    await refusal(f.fetch(`http://mixed.test:${P}/`));
    expect(f.calls['mixed.test']).toBe(1);
    expect(canaryHits()).toBe(0);
  });

  it('resolves again on every hop', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test'] });
    await f.fetch(`http://app.test:${R}/chain/2`);
    expect(f.calls['app.test']).toBe(3);
  });

  it('tries the next checked address when one refuses the connection', async () => {
    const connects: string[] = [];
    const dns = makeResolver({ 'multi.test': ['127.0.0.3', '127.0.0.1'] });
    const f = createSafeFetcher({
      allowedPrivateHosts: ['127.0.0.0/8'],
      resolver: dns.resolver,
      onConnect: (e) => connects.push(e.address),
    });
    const response = await f.fetch(`http://multi.test:${R}/hello`);
    expect(response.body.toString()).toBe('hello');
    expect(connects).toEqual(['127.0.0.3', '127.0.0.1']);
  });
});

describe('allowed private hosts', () => {
  it('reaches a host allowed by name', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test'] });
    const response = await f.fetch(`http://app.test:${R}/hello`);
    expect(response).toMatchObject({
      url: `http://app.test:${R}/hello`,
      status: 200,
      contentType: 'text/plain',
      charset: 'utf-8',
    });
    expect(response.headers['x-test']).toBe('Yes');
    expect(response.headers['content-type']).toBe('text/plain; charset=UTF-8');
    expect(response.body.toString()).toBe('hello');
  });

  it('matches names case-insensitively and ignores a trailing dot', async () => {
    const f = fetcher({ allowedPrivateHosts: ['APP.Test'] });
    const response = await f.fetch(`http://App.TEST.:${R}/hello`);
    expect(response.body.toString()).toBe('hello');
  });

  it('reaches an address allowed by CIDR, literal or resolved', async () => {
    const f = fetcher({ allowedPrivateHosts: ['127.0.0.0/8'] });
    expect((await f.fetch(`http://127.0.0.1:${R}/hello`)).body.toString()).toBe('hello');
    expect((await f.fetch(`http://app.test:${R}/hello`)).body.toString()).toBe('hello');
    const connects: string[] = [];
    const single = fetcher({ allowedPrivateHosts: ['127.0.0.1'], onConnect: (e) => connects.push(e.address) });
    expect((await single.fetch(`http://[::ffff:127.0.0.1]:${R}/hello`)).status).toBe(200);
    expect(connects).toEqual(['127.0.0.1']); // IPv4-mapped literals connect over IPv4
  });

  it('reaches an IPv6 address allowed by CIDR', async (ctx) => {
    const server6 = await tryListen(appServer(), '::1', 0);
    if (!server6) return ctx.skip();
    try {
      const f = fetcher({ allowedPrivateHosts: ['::1/128'] });
      expect((await f.fetch(`http://[::1]:${server6.port}/hello`)).body.toString()).toBe('hello');
      expect((await f.fetch(`http://v6loop.test:${server6.port}/hello`)).body.toString()).toBe('hello');
    } finally {
      await server6.close();
    }
  });

  it('allows localhost only when listed by name', async () => {
    await refusal(fetcher({ allowedPrivateHosts: ['127.0.0.0/8'] }).fetch(`http://localhost:${R}/hello`));
    const f = fetcher({ allowedPrivateHosts: ['localhost'] });
    expect((await f.fetch(`http://localhost:${R}/hello`)).body.toString()).toBe('hello');
    // Listing the name does not allow the literal address.
    await refusal(f.fetch(`http://127.0.0.1:${R}/hello`));
  });

  it('allows a CIDR only for addresses inside it', async () => {
    const f = fetcher({ allowedPrivateHosts: ['10.0.0.0/8'] });
    await refusal(f.fetch(`http://127.0.0.1:${R}/hello`));
    await refusal(f.fetch(`http://canary.test:${P}/`));
    expect(canaryHits()).toBe(0);
  });

  it('never allows metadata or unspecified addresses, whatever the list says', async () => {
    const f = fetcher({ allowedPrivateHosts: ['169.254.0.0/16', 'fd00::/8', '0.0.0.0/8', 'meta.test', 'zero.test'] });
    await refusal(f.fetch('http://169.254.169.254/'));
    await refusal(f.fetch('http://[fd00:ec2::254]/'));
    await refusal(f.fetch('http://meta.test/'));
    await refusal(f.fetch(`http://zero.test:${P}/`));
    await refusal(f.fetch(`http://0.0.0.0:${P}/`));
    expect(canaryHits()).toBe(0);
  });

  it('rejects a malformed allow-list entry at construction', () => {
    expect(() => createSafeFetcher({ allowedPrivateHosts: ['10.0.0.0/33'] })).toThrow(/not a valid CIDR/);
    expect(() => createSafeFetcher({ allowedPrivateHosts: ['http://x/'] })).toThrow(/not a valid CIDR/);
    expect(() => createSafeFetcher({ allowedPrivateHosts: ['bad host'] })).toThrow(/neither/);
  });
});

describe('redirects', () => {
  it.each([301, 302, 303, 307, 308])('follows a %i to a relative Location', async (status) => {
    const f = fetcher({ allowedPrivateHosts: ['app.test'] });
    const response = await f.fetch(`http://app.test:${R}/r/${status}?to=${encodeURIComponent('/headers')}`);
    expect(response.url).toBe(`http://app.test:${R}/headers`);
    expect(JSON.parse(response.body.toString()).method).toBe('GET');
  });

  it('follows a redirect to another allowed host and re-resolves it', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test', 'app2.test'] });
    const to = `http://app2.test:${R}/hello`;
    const response = await f.fetch(`http://app.test:${R}/r/302?to=${encodeURIComponent(to)}`);
    expect(response.url).toBe(to);
    expect(f.calls).toEqual({ 'app.test': 1, 'app2.test': 1 });
  });

  it('refuses a redirect to a host that is not allowed', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test'] });
    const to = `http://app2.test:${R}/hello`;
    const error = await refusal(f.fetch(`http://app.test:${R}/r/302?to=${encodeURIComponent(to)}`));
    expect(error.detail).toBe(
      'The URL redirects to a host that resolves to a loopback address, which is not allowed.',
    );
  });

  it('drops credentials when a redirect leaves the origin', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test', 'app2.test'] });
    const headers = { Authorization: 'Bearer secret', Cookie: 'a=b', 'Accept-Language': 'de' };
    const same = await f.fetch(`http://app.test:${R}/r/302?to=/headers`, { headers });
    expect(JSON.parse(same.body.toString()).headers).toMatchObject({ authorization: 'Bearer secret', cookie: 'a=b' });
    const to = encodeURIComponent(`http://app2.test:${R}/headers`);
    const other = JSON.parse((await f.fetch(`http://app.test:${R}/r/302?to=${to}`, { headers })).body.toString());
    expect(other.headers.authorization).toBeUndefined();
    expect(other.headers.cookie).toBeUndefined();
    expect(other.headers['accept-language']).toBe('de');
  });

  it('follows up to maxRedirects and no further', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test'], maxRedirects: 3 });
    expect((await f.fetch(`http://app.test:${R}/chain/3`)).body.toString()).toBe('end of chain');
    await failure(f.fetch(`http://app.test:${R}/chain/4`), 'url_too_many_redirects');
    await failure(f.fetch(`http://app.test:${R}/loop`), 'url_too_many_redirects');
    const none = fetcher({ allowedPrivateHosts: ['app.test'], maxRedirects: 0 });
    await failure(none.fetch(`http://app.test:${R}/chain/1`), 'url_too_many_redirects');
  });

  it('defaults to 5 redirects', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test'] });
    expect((await f.fetch(`http://app.test:${R}/chain/5`)).status).toBe(200);
    await failure(f.fetch(`http://app.test:${R}/chain/6`), 'url_too_many_redirects');
  });

  it('returns a 3xx without Location as it is', async () => {
    const f = fetcher({ allowedPrivateHosts: ['app.test'] });
    const response = await f.fetch(`http://app.test:${R}/no-location`);
    expect(response.status).toBe(302);
    expect(response.body.toString()).toBe('nowhere');
  });
});

describe('limits and failures', () => {
  const f = (options: Partial<SafeFetcherOptions> = {}) => fetcher({ allowedPrivateHosts: ['app.test'], ...options });

  it('accepts a body of exactly maxBytes', async () => {
    const response = await f({ maxBytes: 1000 }).fetch(`http://app.test:${R}/sized?n=1000`);
    expect(response.body.length).toBe(1000);
  });

  it('refuses a declared Content-Length over maxBytes', async () => {
    const error = await failure(f({ maxBytes: 1000 }).fetch(`http://app.test:${R}/sized?n=1001`), 'url_too_large');
    expect(error.detail).toBe('The page is larger than the 1000 bytes limit.');
  });

  it('stops a chunked body once it passes maxBytes', async () => {
    await failure(f({ maxBytes: 4096 }).fetch(`http://app.test:${R}/chunked?n=100000`), 'url_too_large');
    const ok = await f({ maxBytes: 4096 }).fetch(`http://app.test:${R}/chunked?n=4096`);
    expect(ok.body.length).toBe(4096);
  });

  it('decodes gzip and brotli bodies', async () => {
    const gz = await f().fetch(`http://app.test:${R}/gzip`);
    expect(gz.body.toString()).toBe('<p>compressed</p>');
    expect(gz.headers['content-encoding']).toBeUndefined();
    expect((await f().fetch(`http://app.test:${R}/br`)).body.toString()).toBe('<p>brotli</p>');
    expect((await f().fetch(`http://app.test:${R}/deflate`)).body.toString()).toBe('zlib deflate');
    expect((await f().fetch(`http://app.test:${R}/deflate-raw`)).body.toString()).toBe('raw deflate');
    await failure(f().fetch(`http://app.test:${R}/unknown-encoding`), 'url_fetch_failed');
  });

  it('caps the decoded size of a compressed body', async () => {
    await failure(f({ maxBytes: 64 * 1024 }).fetch(`http://app.test:${R}/bomb`), 'url_too_large');
  });

  it('times out a server that never answers', async () => {
    const started = Date.now();
    const error = await failure(f({ timeoutMs: 200 }).fetch(`http://app.test:${R}/hang`), 'url_timeout');
    expect(error.detail).toBe('The URL did not respond within 0.2 seconds.');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('times out a body that stalls', async () => {
    await failure(f({ timeoutMs: 200 }).fetch(`http://app.test:${R}/stall-body`), 'url_timeout');
  });

  it('rethrows the caller’s abort', async () => {
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error('shutting down')), 50);
    await expect(f().fetch(`http://app.test:${R}/hang`, { signal: stop.signal })).rejects.toThrow('shutting down');
  });

  it('reports a refused connection', async () => {
    const closed = await listen(http.createServer(), '127.0.0.1');
    await closed.close();
    const error = await failure(f().fetch(`http://app.test:${closed.port}/`), 'url_fetch_failed');
    expect(error.detail).toBe('Could not connect to app.test.');
  });

  it('reports a name that does not resolve', async () => {
    const error = await failure(f().fetch('http://unknown.test/'), 'url_fetch_failed');
    expect(error.detail).toBe('The host unknown.test could not be resolved.');
  });

  it('returns error statuses instead of throwing', async () => {
    const response = await f().fetch(`http://app.test:${R}/status/404`);
    expect(response.status).toBe(404);
    expect(response.body.toString()).toBe('missing');
  });

  it('sends our headers and ignores framing headers from the caller', async () => {
    const response = await f({ userAgent: 'TestAgent/1' }).fetch(`http://app.test:${R}/headers`, {
      accept: 'text/html',
      headers: { Host: 'evil.test', 'Transfer-Encoding': 'chunked', 'X-Extra': '1' },
    });
    const seen = JSON.parse(response.body.toString()).headers;
    expect(seen).toMatchObject({
      host: `app.test:${R}`,
      'user-agent': 'TestAgent/1',
      accept: 'text/html',
      'accept-encoding': 'gzip, deflate, br',
      'x-extra': '1',
    });
    expect(seen['transfer-encoding']).toBeUndefined();
  });
});

describe('https', () => {
  let dir: string | null = null;
  let server: TestServer | null = null;
  let cert = '';
  const servernames: Array<string | false | null> = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'fetch-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
          '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'), '-days', '2',
          '-subj', '/CN=secure.test', '-addext', 'subjectAltName=DNS:secure.test',
        ],
        { stdio: 'ignore' },
      );
    } catch {
      return; // no openssl here: the https tests skip
    }
    cert = readFileSync(path.join(dir, 'cert.pem'), 'utf8');
    const tlsServer = https.createServer(
      { key: readFileSync(path.join(dir, 'key.pem')), cert },
      (req, res) => {
        servernames.push((req.socket as TLSSocket).servername);
        res.end('secure hello');
      },
    );
    server = await listen(tlsServer as unknown as http.Server, '127.0.0.1');
  });

  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  beforeEach((ctx) => {
    if (!server) ctx.skip();
  });

  it('connects to the checked address with the host name as SNI and certificate name', async () => {
    const dns = makeResolver({ 'secure.test': ['127.0.0.1'] });
    const f = createSafeFetcher({ allowedPrivateHosts: ['secure.test'], resolver: dns.resolver, ca: cert });
    const response = await f.fetch(`https://secure.test:${server!.port}/`);
    expect(response.body.toString()).toBe('secure hello');
    const dotted = await f.fetch(`https://secure.test.:${server!.port}/`);
    expect(dotted.status).toBe(200);
    expect(servernames).toEqual(['secure.test', 'secure.test']);
  });

  it('fails on an untrusted certificate', async () => {
    const dns = makeResolver({ 'secure.test': ['127.0.0.1'] });
    const f = createSafeFetcher({ allowedPrivateHosts: ['secure.test'], resolver: dns.resolver });
    await failure(f.fetch(`https://secure.test:${server!.port}/`), 'url_fetch_failed');
  });

  it('fails when the certificate names another host', async () => {
    const dns = makeResolver({ 'other.test': ['127.0.0.1'] });
    const f = createSafeFetcher({ allowedPrivateHosts: ['other.test'], resolver: dns.resolver, ca: cert });
    await failure(f.fetch(`https://other.test:${server!.port}/`), 'url_fetch_failed');
  });
});
