import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A small file system of its own for tests of a full disk: `mounted` is false where mounting is not allowed (not root). */
export interface SmallFileSystem {
  readonly dir: string;
  readonly mounted: boolean;
  /** Unmounts it and removes its directory. */
  remove(): void;
}

/** A tmpfs of `size` (e.g. `1m`, `128m`) on a new directory under the system's temporary folder. */
export function mountSmallFileSystem(size: string, prefix = 'wsai-full-'): SmallFileSystem {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' }).status === 0;
  return {
    dir,
    mounted,
    remove() {
      if (mounted) spawnSync('umount', [dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes `file` until its file system refuses another byte. */
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
