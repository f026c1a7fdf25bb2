// The version of a package as installed under the project, shared by scripts/bundle.mjs (which
// records the versions it bundled) and scripts/ensure-build.mjs (which compares them at start).
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** `dir`'s package.json version (`dir` relative to `root`, e.g. node_modules/zod), or undefined when it is not installed. */
export function installedVersion(root, dir) {
  try {
    return JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')).version ?? '';
  } catch {
    return undefined;
  }
}
