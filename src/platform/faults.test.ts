import { createServer, type Server, type Socket } from 'node:net';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Redis, type RedisOptions } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../test/support/redis-server.js';
import { ModelCallError } from '../modules/agents/frameworks.js';
import { AppError, ServiceUnavailableError } from './errors.js';
import { describeDependencyFault, findDependencyFault, isDependencyUnavailable } from './faults.js';

/**
 * The classifier, on errors obtained from real failing connections wherever a local socket can
 * produce them: a closed port, a server that accepts and hangs up, one that accepts and never
 * answers. Shapes only a live server produces are built the way the drivers build them.
 */

/** The error a promise rejects with (fails the test if it resolves). */
async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
}

/** A TCP server that does `onSocket` with each connection; closed after the file. */
const servers: Server[] = [];
const sockets = new Set<Socket>();
async function tcpServer(onSocket: (socket: Socket) => void): Promise<number> {
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

let closedPort: number;
let hangsUp: number;
let silent: number;

beforeAll(async () => {
  closedPort = await freePort();
  hangsUp = await tcpServer((socket) => socket.destroy());
  silent = await tcpServer(() => undefined);
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

const pgUrl = (port: number) => `postgres://nobody@127.0.0.1:${port}/none`;

describe('PostgreSQL faults (pg, pg-pool, Drizzle)', () => {
  it('connection refused, wrapped by Drizzle with the SQL and its parameters', async () => {
    const pool = new pg.Pool({ connectionString: pgUrl(closedPort), connectionTimeoutMillis: 2000 });
    const db = drizzle(pool);
    const error = await failure(db.execute(sql`select ${'secret-parameter'} as leaked from users`));
    await pool.end();
    expect(error.message).toContain('secret-parameter'); // Drizzle's message: why it is never logged
    expect(isDependencyUnavailable(error)).toBe(true);
    const described = describeDependencyFault(error)!;
    expect(described.code).toBe('ECONNREFUSED');
    expect(JSON.stringify(described)).not.toMatch(/secret-parameter|select|users/);
  });

  it('a server that hangs up: "Connection terminated unexpectedly"', async () => {
    const client = new pg.Client({ connectionString: pgUrl(hangsUp) });
    const error = await failure(client.connect());
    expect(error.message).toMatch(/^Connection terminated/);
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('a server that never answers: the pool gives up after connectionTimeoutMillis', async () => {
    const pool = new pg.Pool({ connectionString: pgUrl(silent), connectionTimeoutMillis: 200 });
    const started = Date.now();
    const error = await failure(pool.query('select 1'));
    expect(Date.now() - started).toBeLessThan(2000);
    await pool.end();
    expect(error.message).toMatch(/^Connection terminated due to connection timeout/);
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('a full pool: "timeout exceeded when trying to connect"', async () => {
    const pool = new pg.Pool({ connectionString: pgUrl(silent), connectionTimeoutMillis: 150, max: 1 });
    const first = failure(pool.query('select 1'));
    const second = await failure(pool.query('select 2'));
    await first;
    await pool.end();
    expect(second.message).toBe('timeout exceeded when trying to connect');
    expect(isDependencyUnavailable(second)).toBe(true);
  });

  it.each([
    ['Query read timeout', undefined],
    ['Client has encountered a connection error and is not queryable', undefined],
    ['terminating connection due to administrator command', '57P01'],
    ['terminating connection because of crash of another server process', '57P02'],
    ['the database system is starting up', '57P03'],
    ['sorry, too many clients already', '53300'],
    ['connection failure', '08006'],
    ['could not connect', '08001'],
    ['connection does not exist', '08003'],
  ])('%s (%s), also inside a DrizzleQueryError-like wrapper', (message, code) => {
    const driver = Object.assign(new Error(message), code ? { code } : {});
    expect(isDependencyUnavailable(driver)).toBe(true);
    const wrapped = Object.assign(new Error(`Failed query: select 1\nparams: secret`), { cause: driver });
    expect(findDependencyFault(wrapped)).toBe(driver);
    expect(describeDependencyFault(wrapped)).toEqual({ ...(code ? { code } : {}), message });
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('a real 57P01: the backend terminated by an administrator', async () => {
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    client.on('error', () => undefined);
    await client.connect();
    const error = await failure(client.query('select pg_terminate_backend(pg_backend_pid())'));
    await client.end().catch(() => undefined);
    expect((error as Error & { code?: string }).code).toBe('57P01');
    expect(isDependencyUnavailable(error)).toBe(true);
  });
});

describe('Redis faults (ioredis)', () => {
  const clients: Redis[] = [];
  const redis = (port: number, options: RedisOptions) => {
    const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 200, ...options });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };
  afterAll(() => {
    for (const client of clients) client.disconnect();
  });

  it('no offline queue and nothing listening: "Stream isn\'t writeable ..."', async () => {
    const error = await failure(redis(closedPort, { enableOfflineQueue: false }).get('k'));
    expect(error.message).toMatch(/^Stream isn't writeable and enableOfflineQueue options is false/);
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('a server that never answers: "Command timed out"', async () => {
    const error = await failure(redis(silent, { commandTimeout: 100 }).get('k'));
    expect(error.message).toBe('Command timed out');
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('retries used up while Redis is down: MaxRetriesPerRequestError', async () => {
    const error = await failure(redis(closedPort, { maxRetriesPerRequest: 0 }).get('k'));
    expect(error.name).toBe('MaxRetriesPerRequestError');
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('a connection closed for good: "Connection is closed."', async () => {
    const client = redis(closedPort, { lazyConnect: true });
    client.disconnect();
    const error = await failure(client.get('k'));
    expect(error.message).toBe('Connection is closed.');
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('the connection error it emits carries the errno (ECONNREFUSED)', async () => {
    const client = new Redis({ host: '127.0.0.1', port: closedPort, lazyConnect: true, retryStrategy: () => null });
    const emitted = new Promise<Error>((resolve) => client.once('error', resolve));
    await client.connect().catch(() => undefined);
    const error = await emitted;
    client.disconnect();
    expect(isDependencyUnavailable(error)).toBe(true);
    expect(describeDependencyFault(error)?.code).toBe('ECONNREFUSED');
  });
});

describe('the shapes around them', () => {
  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'])('errno %s', (code) => {
    expect(isDependencyUnavailable(Object.assign(new Error(`connect ${code} 10.0.0.1:5432`), { code }))).toBe(true);
  });

  it('an AggregateError (every address of a host refused) and a deep cause chain', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    const aggregate = new AggregateError([new Error('other'), refused], 'all addresses failed');
    expect(findDependencyFault(aggregate)).toBe(refused);
    const deep = new Error('outer', { cause: new Error('middle', { cause: aggregate }) });
    expect(isDependencyUnavailable(deep)).toBe(true);
  });

  it('is not fooled by bugs, bad queries, cycles or SQL that mentions the words', () => {
    const unique = Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' });
    const syntax = Object.assign(new Error('syntax error at or near "selec"'), { code: '42601' });
    const cyclic = new Error('loop') as Error & { cause?: unknown };
    cyclic.cause = new Error('back', { cause: cyclic });
    const sqlText = new Error("Failed query: select 'Connection terminated' from x\nparams: ECONNREFUSED", {
      cause: syntax,
    });
    for (const error of [unique, syntax, cyclic, sqlText, new TypeError('x is undefined'), 'a string', null, undefined, 42]) {
      expect(isDependencyUnavailable(error)).toBe(false);
    }
    expect(isDependencyUnavailable(new AppError(400, 'bad', 'Bad.'))).toBe(false);
  });

  it('a model provider that cannot be reached is still recognised (callers check ModelCallError first)', () => {
    const refused = Object.assign(new Error('fetch failed'), { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) });
    expect(isDependencyUnavailable(new ModelCallError(refused))).toBe(true);
  });

  it('ServiceUnavailableError carries Retry-After', () => {
    const error = new ServiceUnavailableError();
    expect(error.status).toBe(503);
    expect(error.code).toBe('service_unavailable');
    expect(Number(error.headers?.['Retry-After'])).toBeGreaterThan(0);
  });
});
