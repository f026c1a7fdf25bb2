CREATE TABLE "chunk_embeddings" (
	"chunk_id" uuid NOT NULL,
	"generation" integer NOT NULL,
	"document_id" uuid NOT NULL,
	"embedding" vector NOT NULL,
	CONSTRAINT "chunk_embeddings_chunk_id_generation_pk" PRIMARY KEY("chunk_id","generation")
);
--> statement-breakpoint
CREATE TABLE "embedding_generations" (
	"id" serial PRIMARY KEY NOT NULL,
	"model" text,
	"dimensions" integer NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"activated_at" timestamp with time zone,
	"retired_at" timestamp with time zone,
	CONSTRAINT "embedding_generations_dimensions_check" CHECK ("embedding_generations"."dimensions" BETWEEN 1 AND 4000)
);
--> statement-breakpoint
DROP INDEX "document_chunks_embedding_idx";--> statement-breakpoint
ALTER TABLE "chunk_embeddings" ADD CONSTRAINT "chunk_embeddings_chunk_id_document_chunks_id_fk" FOREIGN KEY ("chunk_id") REFERENCES "public"."document_chunks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chunk_embeddings" ADD CONSTRAINT "chunk_embeddings_generation_embedding_generations_id_fk" FOREIGN KEY ("generation") REFERENCES "public"."embedding_generations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chunk_embeddings" ADD CONSTRAINT "chunk_embeddings_document_id_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "chunk_embeddings_document_idx" ON "chunk_embeddings" USING btree ("document_id","generation");--> statement-breakpoint
CREATE INDEX "chunk_embeddings_generation_idx" ON "chunk_embeddings" USING btree ("generation");--> statement-breakpoint
CREATE INDEX "embedding_generations_state_idx" ON "embedding_generations" USING btree ("state");--> statement-breakpoint
-- Vectors made before generations existed (1,536 dimensions, the model not recorded) become
-- generation 1, active, with its own index; the service adopts it as EMBEDDING_MODEL's when the
-- sizes agree (embeddings.service.ts), otherwise re-embeds.
INSERT INTO "embedding_generations" ("model", "dimensions", "state", "activated_at")
  SELECT NULL, 1536, 'active', now() WHERE EXISTS (SELECT 1 FROM "document_chunks" WHERE "embedding" IS NOT NULL);--> statement-breakpoint
INSERT INTO "chunk_embeddings" ("chunk_id", "generation", "document_id", "embedding")
  SELECT c."id", g."id", c."document_id", c."embedding" FROM "document_chunks" c, "embedding_generations" g
  WHERE c."embedding" IS NOT NULL AND g."state" = 'active';--> statement-breakpoint
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM "embedding_generations" WHERE "id" = 1) THEN
    CREATE INDEX IF NOT EXISTS "chunk_embeddings_hnsw_1" ON "chunk_embeddings" USING hnsw (("embedding"::halfvec(1536)) halfvec_cosine_ops) WHERE "generation" = 1;
  END IF;
END $$;--> statement-breakpoint
ALTER TABLE "document_chunks" DROP COLUMN "embedding";