import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestApp, TEST_SECRET_KEY } from '../test/support/app.js';
import { parseSse } from '../test/support/chat.js';
import { buildDocx, buildPdf } from '../test/support/document-files.js';
import { docsBase } from '../test/support/documents.js';
import { buildXlsx } from '../test/support/office-files.js';
import { startFakeModelServer } from '../test/support/fake-model-server.js';
import { httpCaller, spawnService } from '../test/support/processes.js';
import { freePort } from '../test/support/redis-server.js';
import { sleep, waitUntil } from '../test/support/wait.js';

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** The kernel's cap on a listen backlog (Linux), or 0 where it cannot be read. */
function somaxconn(): number {
  try {
    return Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim());
  } catch {
    return 0;
  }
}

const BURST = 1000;

/** The real server on the embedded profile, on a free port with a fresh DATA_DIR; `remove` deletes it after the stop. */
async function startEmbeddedServer(name: string, env: Record<string, string> = {}) {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), `wsai-${name}-`));
  const server = spawnService('server', { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, SECRET_KEY: TEST_SECRET_KEY, ...env });
  return { port, server, remove: () => rmSync(dataDir, { recursive: true, force: true }) };
}

describe('the bundled server (what `npm start` runs: scripts/bundle.mjs)', () => {
  it('signs up, opens a workspace and a chat, streams a reply from the model, ingests a PDF, a Word file and a workbook, and serves the same API document and docs page', { timeout: 90_000 }, async () => {
    const fake = await startFakeModelServer();
    const { port, server, remove } = await startEmbeddedServer('bundle', {
      ...fake.env,
      PUBLIC_BASE_URL: 'http://localhost:8000',
      REQUIRE_EMAIL_VERIFICATION: 'false',
    });
    const reference = await createTestApp();
    try {
      // The test suite's processes run the bundle, not the sources.
      expect(server.child.spawnargs.join(' ')).toContain(`${path.sep}.test-bundles${path.sep}`);
      await server.ready;
      const base = `http://127.0.0.1:${port}`;
      const call = httpCaller(base);
      const json = (res: { text: string }) => JSON.parse(res.text) as Record<string, string>;

      const credentials = { email: 'bundle@example.com', password: 'a long enough password 1' };
      expect((await call('POST', '/auth/users/', credentials)).status).toBe(201);
      const login = await call('POST', '/auth/token/login/', credentials);
      expect(login.status, login.text).toBe(200);
      const token = json(login).auth_token!;
      const workspace = await call('POST', '/api/workspaces/', { name: 'Bundled' }, token);
      expect(workspace.status, workspace.text).toBe(201);
      const chat = await call('POST', `/api/workspaces/${json(workspace).id}/chats/`, { name: 'First' }, token);
      expect(chat.status, chat.text).toBe(201);

      fake.enqueue({ text: 'Hello from the model', chunks: ['Hello', ' from', ' the model'] });
      const sent = await call('POST', `/api/workspaces/${json(workspace).id}/chats/${json(chat).id}/messages/stream/`, { content: 'Hi' }, token);
      expect(sent.status, sent.text).toBe(200);
      expect(sent.type).toContain('text/event-stream');
      const events = parseSse(sent.text);
      expect(events.map((e) => e.event), sent.text + server.output().slice(-3000)).toEqual(['delta', 'delta', 'delta', 'done']);
      expect(events.filter((e) => e.event === 'delta').map((e) => e.data)).toEqual([{ text: 'Hello' }, { text: ' from' }, { text: ' the model' }]);

      // Documents through the on-demand chunks: PDF (unpdf, external), Word (mammoth, external), a
      // workbook (our own zip reader, a chunk of the bundle), each ready for search.
      const files = [
        { name: 'report.pdf', content_type: 'application/pdf', bytes: buildPdf([['A copper kettle on page one.']]) },
        { name: 'notes.docx', content_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', bytes: buildDocx(['A copper kettle in Word.']) },
        { name: 'orders.xlsx', content_type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', bytes: buildXlsx([{ name: 'Orders', rows: [['copper kettle']] }]) },
      ];
      const wsDocs = docsBase(json(workspace).id!);
      for (const file of files) {
        const started = await call('POST', `${wsDocs}upload/`, { name: file.name, content_type: file.content_type, size: file.bytes.length }, token);
        expect(started.status, started.text).toBe(201);
        const { document, upload } = JSON.parse(started.text) as { document: { id: string }; upload: { url: string; headers: Record<string, string> } };
        const signed = new URL(upload.url);
        const put = await fetch(`${base}${signed.pathname}${signed.search}`, { method: 'PUT', headers: upload.headers, body: file.bytes });
        expect(put.status, await put.text()).toBe(200);
        expect((await call('POST', `${wsDocs}${document.id}/confirm-upload/`, {}, token)).status).toBe(202);
        const status = await waitUntil(async () => {
          const current = json(await call('GET', `${wsDocs}${document.id}/processing-status/`, undefined, token)).processing_status;
          return current !== 'pending' && current !== 'processing' && current;
        }, 30_000);
        expect(status, `${file.name}\n${server.output().slice(-3000)}`).toBe('ready');
      }

      // The OpenAPI document, built by @fastify/swagger inside the bundle, as the app built from the sources has it.
      const document = await call('GET', '/api/schema/');
      expect(document.status).toBe(200);
      expect(JSON.parse(document.text)).toEqual((await reference.request('GET', '/api/schema/')).json());
      // Swagger UI stays in node_modules (its static files): its page and assets are served.
      const page = await fetch(`${base}/api/docs/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('swagger');
      expect((await fetch(`${base}/api/docs/static/swagger-ui.css`)).status).toBe(200);
    } finally {
      await server.stop();
      await reference.close();
      await fake.close();
      remove();
    }
  });
});

describe('the server process starting up (embedded profile)', () => {
  it('a stop signal as soon as it listens ends it gracefully, and nothing starts after the stop', { timeout: 90_000 }, async () => {
    const { port, server, remove } = await startEmbeddedServer('start-stop');
    try {
      // The moment the port accepts connections: background work (the in-process worker's
      // start-up reconciler) is about to start or starting, and the signal comes in between.
      while (!(await accepts(port))) {
        if (server.child.exitCode !== null) throw new Error(server.output());
        await sleep(2);
      }
      server.child.kill('SIGTERM');
      expect(await server.exited, server.output()).toBe(0);
      const messages = server.lines().map((line) => line.msg);
      expect(messages, server.output()).toContain('shutdown complete');
      const stoppedAt = messages.indexOf('shutting down');
      expect(stoppedAt).toBeGreaterThanOrEqual(0);
      expect(messages.slice(stoppedAt), server.output()).not.toContain('service started');
    } finally {
      await server.stop();
      remove();
    }
  });

  // The kernel completes connections into the listen queue while the process does not accept
  // them: a stopped process shows how many a burst can queue before SYNs are dropped (each
  // dropped client retries after a second). Node's default backlog queues 512.
  it.skipIf(somaxconn() < 1024)(`queues a burst of ${BURST} connections while its event loop is busy (listen backlog)`, { timeout: 90_000 }, async () => {
    const { port, server, remove } = await startEmbeddedServer('backlog');
    const sockets: Socket[] = [];
    // A stopped process ignores SIGTERM: should this test runner die first, it must not stay stopped.
    const killServer = () => server.child.kill('SIGKILL');
    process.once('exit', killServer);
    try {
      await server.ready;
      server.child.kill('SIGSTOP');
      let connected = 0;
      for (let i = 0; i < BURST; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.once('connect', () => (connected += 1));
        sockets.push(socket);
      }
      // Queued connections complete at once (the kernel answers); dropped ones wait a second for their retry.
      const deadline = performance.now() + 900;
      while (connected < BURST && performance.now() < deadline) await sleep(10);
      expect(connected).toBe(BURST);
    } finally {
      for (const socket of sockets) socket.destroy();
      server.child.kill('SIGCONT');
      process.off('exit', killServer);
      await server.stop();
      remove();
    }
  });
});
