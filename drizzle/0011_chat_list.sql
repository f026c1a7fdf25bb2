DROP INDEX "chat_shares_user_idx";--> statement-breakpoint
CREATE INDEX "chat_sessions_visible_owner_idx" ON "chat_sessions" USING btree ("workspace_id","owner_id","updated_at","id");--> statement-breakpoint
CREATE INDEX "chat_sessions_visible_public_idx" ON "chat_sessions" USING btree ("workspace_id","updated_at","id") WHERE "chat_sessions"."is_public";--> statement-breakpoint
CREATE INDEX "chat_shares_user_idx" ON "chat_shares" USING btree ("user_id","session_id");