import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../test/support/app.js';
import { putToSignedUrl, startUpload } from '../../../test/support/documents.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';
import { mountSmallFileSystem } from '../../../test/support/full-disk.js';

/**
 * The local file store's disk is full: DATA_DIR on a 1 MiB tmpfs (mounting needs root, as on the
 * CI machines; elsewhere the test is skipped). An upload that does not fit is refused with 507
 * `storage_full`, leaves nothing behind, and the store works again once there is room.
 */
const disk = mountSmallFileSystem('1m');
const { dir: mountPoint, mounted } = disk;

describe.skipIf(!mounted)('local storage on a full disk', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ DATA_DIR: mountPoint, THROTTLE_DOCUMENT_UPLOADS: '1000/hour' });
  });

  afterAll(async () => {
    await t?.close().catch(() => undefined);
    disk.remove();
  });

  it('answers 507 storage_full, keeps no partial file, and stores again once there is room', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const big = Buffer.alloc(3 * 1024 * 1024, 'x');
    const { upload } = await startUpload(t, ws.id, owner, { name: 'big.txt', content_type: 'text/plain', size: big.length });
    const res = await putToSignedUrl(t, upload, big);
    expect(res.statusCode, res.body).toBe(507);
    expect(res.json()).toEqual({ detail: expect.stringMatching(/file store is full/), code: 'storage_full' });
    expect(readdirSync(path.join(mountPoint, 'files', '.tmp'))).toEqual([]);

    const small = Buffer.from('a small note', 'utf8');
    const second = await startUpload(t, ws.id, owner, { name: 'note.txt', content_type: 'text/plain', size: small.length });
    expect((await putToSignedUrl(t, second.upload, small)).statusCode).toBe(200);
  });
});

if (!mounted) disk.remove();
