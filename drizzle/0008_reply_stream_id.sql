ALTER TABLE "messages" ADD COLUMN "stream_id" text;--> statement-breakpoint
CREATE INDEX "messages_stream_idx" ON "messages" USING btree ("session_id","stream_id");