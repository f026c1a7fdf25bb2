ALTER TABLE "document_chunks" ADD COLUMN "ts_config" "regconfig" DEFAULT 'english'::regconfig NOT NULL;--> statement-breakpoint
ALTER TABLE "document_chunks" ADD COLUMN "search_text" text;--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "language" text;--> statement-breakpoint
ALTER TABLE "documents" ADD COLUMN "search_config" text DEFAULT 'english' NOT NULL;--> statement-breakpoint
-- Hand-ordered: the generated column's new expression needs ts_config and search_text first, and
-- dropping the old column dropped its GIN index, which is built again on the recomputed column.
ALTER TABLE "document_chunks" DROP COLUMN "tsv";--> statement-breakpoint
ALTER TABLE "document_chunks" ADD COLUMN "tsv" "tsvector" GENERATED ALWAYS AS (to_tsvector(ts_config, coalesce(search_text, content))) STORED;--> statement-breakpoint
CREATE INDEX "document_chunks_tsv_idx" ON "document_chunks" USING gin ("tsv");
