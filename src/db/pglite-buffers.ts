import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const MIB = 1024 * 1024;
/** PostgreSQL's default, and the most the automatic size gives. */
export const MAX_AUTO_SHARED_BUFFERS_MB = 128;
export const MIN_SHARED_BUFFERS_MB = 16;

/**
 * The embedded database's shared buffers when none is configured: twice the size of its largest
 * database's files (room to grow during the run), between 16 MB and PostgreSQL's 128 MB. A new
 * or small database does not pay for buffers it could never fill: PGlite prepares all of them
 * at every start (~0.45 s of a 1.2 s open for 128 MB on a slow 2-core machine, ~100 MiB of
 * memory), and pages beyond them are read from the operating system's file cache.
 */
export function autoSharedBuffersMb(dataDir: string): number {
  let largest = 0;
  for (const database of entries(path.join(dataDir, 'base'))) {
    if (!database.isDirectory()) continue;
    let bytes = 0;
    for (const file of entries(path.join(database.parentPath, database.name))) {
      if (file.isFile()) bytes += sizeOf(path.join(file.parentPath, file.name));
    }
    largest = Math.max(largest, bytes);
  }
  return Math.min(MAX_AUTO_SHARED_BUFFERS_MB, Math.max(MIN_SHARED_BUFFERS_MB, Math.ceil((2 * largest) / MIB)));
}

function entries(dir: string) {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** A file removed meanwhile counts as empty. */
function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
