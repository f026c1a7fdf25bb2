import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '.test-bundles/', 'node_modules/', 'data/', 'drizzle/', 'coverage/', 'clients/typescript/dist/', 'clients/typescript/src/schema.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  { files: ['bench/**', '.ci/**', 'test/support/**'], rules: { 'no-console': 'off' } },
  // The input gate for multipart bodies: every part is read through formParts() in
  // src/platform/multipart.ts, which checks its strings and turns parser failures into 4xx.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/platform/multipart.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: '@fastify/multipart', message: 'Use registerMultipart() and formParts() from src/platform/multipart.ts.' }] },
      ],
      'no-restricted-properties': [
        'error',
        ...['parts', 'file', 'files', 'saveRequestFiles'].map((property) => ({
          object: 'request',
          property,
          message: 'Read multipart bodies with formParts() from src/platform/multipart.ts (the input gate).',
        })),
      ],
    },
  },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
  // The dependency-cruiser configuration (module boundaries): plain CommonJS read by depcruise.
  {
    files: ['.dependency-cruiser.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { parserOptions: { projectService: false }, sourceType: 'commonjs', globals: { module: 'writable' } },
  },
  // Plain-Node scripts (no TypeScript: they run where dev dependencies were pruned).
  {
    files: ['scripts/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { parserOptions: { projectService: false }, globals: { process: 'readonly', fetch: 'readonly', AbortSignal: 'readonly' } },
  },
);
