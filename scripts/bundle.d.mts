// Types of scripts/bundle.mjs for the TypeScript that imports it (test/support/global-setup.ts).
import type { BuildResult } from 'esbuild';

export declare function bundleService(options: { root: string; entryPoints: Record<string, string>; outdir: string; metafile?: boolean }): Promise<BuildResult>;
