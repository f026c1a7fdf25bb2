import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_SECRET_KEY } from '../../test/support/app.js';
import { fillFileSystem, mountSmallFileSystem } from '../../test/support/full-disk.js';
import { httpCaller, spawnService } from '../../test/support/processes.js';
import { freePort } from '../../test/support/redis-server.js';

/**
 * The embedded database (PGlite) on a full disk: its directory on a 128 MiB tmpfs that the
 * scenario fills (mounting needs root, as on the CI machines; elsewhere skipped). A write that
 * needs new pages fails (SQLSTATE 53100) and the database carries on; when its write-ahead log
 * cannot grow, postgres PANICs, after which PGlite's next statement would never return and hold
 * the thread, so the wrapper (db/client.ts) must hand it nothing more. The scenario runs in a
 * child process (test/support/pglite-full-disk.ts) that is killed if it hangs.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const scenarioDisk = mountSmallFileSystem('128m', 'wsai-pglite-full-');
const serviceDisk = mountSmallFileSystem('256m', 'wsai-service-full-');
const { dir: mountPoint, mounted } = scenarioDisk;
const { dir: serviceDir } = serviceDisk;
const serviceMounted = mounted && serviceDisk.mounted;

afterAll(() => {
  scenarioDisk.remove();
  serviceDisk.remove();
});

describe.skipIf(!mounted)('the embedded database on a full disk', () => {
  it('refuses a write that needs room and carries on; stops at a PANIC without hanging; opens again with what was committed', { timeout: 120_000 }, () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/pglite-full-disk.ts', mountPoint], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 90_000,
      killSignal: 'SIGKILL',
    });
    expect(run.signal, `the scenario hung and was killed:\n${run.stderr}`).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;

    // Out of room for new pages: an error, not a stop; reads go on.
    expect(result.largeInsert).toEqual({ name: 'error', code: '53100', severity: 'ERROR' });
    expect(result.readAfterLargeInsert).toBe(1);
    expect(result.stopsAfterLargeInsert).toBe(0);

    // The log could not grow: one PANIC, reported once. The statement that met it gets its error;
    // the statement and the transaction queued behind it are refused (57P02: 503 for a request).
    expect(result.stops).toEqual([{ name: 'error', code: '53100', severity: 'PANIC' }]);
    const stopped = { name: 'EmbeddedDatabaseStoppedError', code: '57P02' };
    expect(result.lastRound).toEqual([{ name: 'error', code: '53100', severity: 'PANIC' }, stopped, stopped]);
    expect(result.afterStop).toEqual([stopped, stopped, stopped]);
    expect(result.stoppedWithinMs as number).toBeLessThan(30_000);
    // As requests: the one that met the stop is told the storage is full; those after it, to retry.
    expect(result.answers).toEqual({
      '/met': { status: 507, code: 'storage_full' },
      '/refused': { status: 503, code: 'service_unavailable', retryAfter: expect.any(String) },
    });

    expect(result.openOnFullDisk).toMatch(/could not start: its file system has 0 MiB free \(is the disk full\?\)/);

    // What was committed before the stop is there.
    expect(result.reopened).toEqual({ notes: ['kept'], round: result.committedRound });
  });

  it.skipIf(!serviceMounted)(
    'the service answers a write that does not fit with 507 storage_full, keeps answering reads, and writes again once there is room',
    { timeout: 120_000 },
    async () => {
      const port = await freePort();
      const server = spawnService('server', {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: serviceDir,
        SECRET_KEY: TEST_SECRET_KEY,
        REQUIRE_EMAIL_VERIFICATION: 'false',
      });
      try {
        await server.ready;
        const http = httpCaller(`http://127.0.0.1:${port}`);
        const call = async (method: string, url: string, body?: unknown, token?: string) => {
          const res = await http(method, url, body, token);
          return { status: res.status, json: JSON.parse(res.text) as Record<string, string> };
        };
        const credentials = { email: 'full@example.com', password: 'a long enough password 1' };
        expect((await call('POST', '/auth/users/', credentials)).status).toBe(201);
        const token = (await call('POST', '/auth/token/login/', credentials)).json.auth_token!;
        const workspace = (await call('POST', '/api/workspaces/', { name: 'Full' }, token)).json;
        const chats = `/api/workspaces/${workspace.id}/chats/`;
        // Prompts that do not compress: each needs new pages.
        const chat = (name: string) => call('POST', chats, { name, system_prompt: randomBytes(7_500).toString('base64') }, token);
        expect((await chat('Before')).status).toBe(201);

        const filler = path.join(serviceDir, 'filler');
        fillFileSystem(filler);
        const refused = await chat('Does not fit');
        expect(refused).toEqual({
          status: 507,
          json: { detail: "The service's storage is full; nothing was stored. Please try again later or contact the operator.", code: 'storage_full' },
        });
        const listed = await call('GET', chats, undefined, token);
        expect(listed.status).toBe(200);
        expect((listed.json as unknown as { results: Array<{ name: string }> }).results.map((c) => c.name)).toEqual(['Before']);
        expect(server.lines().some((line) => line.msg === 'database disk full')).toBe(true);

        rmSync(filler);
        expect((await chat('After')).status).toBe(201);
      } finally {
        await server.stop();
      }
      expect(await server.exited).toBe(0);
    },
  );
});
