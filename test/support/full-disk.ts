import { closeSync, openSync, writeSync } from 'node:fs';

/** Writes `file` until its file system refuses another byte (tests of a full disk, on a small tmpfs). */
export function fillFileSystem(file: string): void {
  const fd = openSync(file, 'w');
  for (const size of [1 << 20, 4096, 512]) {
    const block = Buffer.alloc(size);
    try {
      for (;;) writeSync(fd, block);
    } catch {
      // ENOSPC: a smaller block may still fit.
    }
  }
  closeSync(fd);
}
