import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite, queryRows } from './client.js';
import { autoSharedBuffersMb } from './pglite-buffers.js';
import { sql } from 'drizzle-orm';

const MIB = 1024 * 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wsai-buffers-'));
  dirs.push(dir);
  return dir;
};

/** A data directory whose databases' files add up to the given sizes (sparse files). */
function dataDir(databases: Record<string, number[]>): string {
  const dir = tempDir();
  for (const [oid, files] of Object.entries(databases)) {
    mkdirSync(path.join(dir, 'base', oid), { recursive: true });
    files.forEach((bytes, i) => {
      const file = path.join(dir, 'base', oid, String(16_000 + i));
      writeFileSync(file, '');
      truncateSync(file, bytes);
    });
  }
  // Outside base/: not a database's pages (the write-ahead log).
  mkdirSync(path.join(dir, 'pg_wal'));
  writeFileSync(path.join(dir, 'pg_wal', '000000010000000000000001'), '');
  truncateSync(path.join(dir, 'pg_wal', '000000010000000000000001'), 16 * MIB);
  return dir;
}

describe('shared buffers of the embedded database', () => {
  it('are twice the largest database, between 16 and 128 MB', () => {
    expect(autoSharedBuffersMb(path.join(tempDir(), 'missing'))).toBe(16);
    expect(autoSharedBuffersMb(dataDir({ 1: [7 * MIB], 5: [6 * MIB, 3 * MIB] }))).toBe(18);
    expect(autoSharedBuffersMb(dataDir({ 1: [7 * MIB], 5: [2 * MIB] }))).toBe(16);
    expect(autoSharedBuffersMb(dataDir({ 5: [30 * MIB, 10 * MIB + 1] }))).toBe(81);
    expect(autoSharedBuffersMb(dataDir({ 5: [1024 * MIB] }))).toBe(128);
  });

  it('reach PGlite: sized from its data directory, or as configured', async () => {
    const dir = path.join(tempDir(), 'db');
    const fresh = await openPglite(dir);
    try {
      expect(await queryRows(fresh.db, sql`SHOW shared_buffers`)).toEqual([{ shared_buffers: '16MB' }]);
    } finally {
      await fresh.close();
    }
    const configured = await openPglite(dir, { sharedBuffersMb: 48 });
    try {
      expect(await queryRows(configured.db, sql`SHOW shared_buffers`)).toEqual([{ shared_buffers: '48MB' }]);
    } finally {
      await configured.close();
    }
  });
});
