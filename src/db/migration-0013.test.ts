import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite, queryRows } from './client.js';
import { migrationsFolder } from './migrate.js';

/*
 * Migration 0013 moves vectors out of document_chunks into chunk_embeddings (generation 1, model
 * unknown, with its own index). Run on a database migrated to 0012 that holds vectors, then to the end.
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'wsai-migration-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of the migrations folder whose journal ends at migration `lastIdx`. */
function migrationsUpTo(lastIdx: number): string {
  const target = path.join(dir, `upto-${lastIdx}`);
  cpSync(migrationsFolder(), target, { recursive: true });
  const journalFile = path.join(target, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: Array<{ idx: number }> };
  journal.entries = journal.entries.filter((entry) => entry.idx <= lastIdx);
  writeFileSync(journalFile, JSON.stringify(journal));
  return target;
}

describe('migration 0013 (embedding generations)', () => {
  it('keeps the vectors of an existing database as generation 1, indexed, and drops the old column', async () => {
    const database = await openPglite('memory://');
    const db = database.db as unknown as PgliteDatabase;
    try {
      await database.db.execute(sql`CREATE EXTENSION IF NOT EXISTS vector`);
      await migrate(db, { migrationsFolder: migrationsUpTo(12) });
      const vector = (i: number) => `[${Array.from({ length: 1536 }, (_, k) => (k === i ? 1 : 0)).join(',')}]`;
      const [user] = await queryRows<{ id: number }>(
        database.db,
        sql`INSERT INTO users (email, password_hash) VALUES ('old@example.com', 'x') RETURNING id`,
      );
      const [ws] = await queryRows<{ id: string }>(
        database.db,
        sql`INSERT INTO workspaces (name, slug, owner_id) VALUES ('Old', 'old', ${user!.id}) RETURNING id`,
      );
      const [doc] = await queryRows<{ id: string }>(
        database.db,
        sql`INSERT INTO documents (workspace_id, name, source_kind, storage_key, processing_status) VALUES (${ws!.id}, 'a.txt', 'upload', 'k', 'ready') RETURNING id`,
      );
      await database.db.execute(sql`INSERT INTO document_chunks (document_id, workspace_id, chunk_index, content, token_count, embedding)
        VALUES (${doc!.id}, ${ws!.id}, 0, 'first', 1, ${vector(0)}::vector), (${doc!.id}, ${ws!.id}, 1, 'second', 1, ${vector(1)}::vector),
               (${doc!.id}, ${ws!.id}, 2, 'no vector', 2, NULL)`);

      await migrate(db, { migrationsFolder: migrationsFolder() });

      expect(await queryRows(database.db, sql`SELECT id, model, dimensions, state FROM embedding_generations`)).toEqual([
        { id: 1, model: null, dimensions: 1536, state: 'active' },
      ]);
      const moved = await queryRows<{ content: string; generation: number; document_id: string; first: number }>(
        database.db,
        sql`SELECT c.content, e.generation, e.document_id, (e.embedding::real[])[1] AS first
            FROM chunk_embeddings e JOIN document_chunks c ON c.id = e.chunk_id ORDER BY c.chunk_index`,
      );
      expect(moved).toEqual([
        { content: 'first', generation: 1, document_id: doc!.id, first: 1 },
        { content: 'second', generation: 1, document_id: doc!.id, first: 0 },
      ]);
      const indexes = await queryRows<{ indexname: string }>(
        database.db,
        sql`SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunk_embeddings_hnsw_%'`,
      );
      expect(indexes.map((i) => i.indexname)).toEqual(['chunk_embeddings_hnsw_1']);
      const columns = await queryRows<{ column_name: string }>(
        database.db,
        sql`SELECT column_name FROM information_schema.columns WHERE table_name = 'document_chunks' AND column_name = 'embedding'`,
      );
      expect(columns).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('on a database without vectors creates no generation and no index (ids and sizes are the first model’s)', async () => {
    const database = await openPglite('memory://');
    try {
      await database.db.execute(sql`CREATE EXTENSION IF NOT EXISTS vector`);
      await migrate(database.db as unknown as PgliteDatabase, { migrationsFolder: migrationsFolder() });
      expect(await queryRows(database.db, sql`SELECT id FROM embedding_generations`)).toEqual([]);
      expect(await queryRows(database.db, sql`SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunk_embeddings_hnsw_%'`)).toEqual([]);
    } finally {
      await database.close();
    }
  });
});
