import { defineConfig } from 'drizzle-kit';

// Migrations are generated from every domain's *.table.ts and committed under drizzle/.
export default defineConfig({
  dialect: 'postgresql',
  schema: ['./src/modules/**/*.table.ts', './src/platform/**/*.table.ts'],
  out: './drizzle',
});
