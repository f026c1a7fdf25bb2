import { defineConfig } from 'vitest/config';

// One database per worker process (see test/support/db.ts): files run in parallel across
// workers, tests inside a file run in order, and tables are truncated between tests.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'clients/typescript/test/**/*.test.ts'],
    pool: 'forks',
    isolate: false,
    maxWorkers: process.env.VITEST_MAX_WORKERS ? Number(process.env.VITEST_MAX_WORKERS) : 2,
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
