CREATE TABLE "plan_overrides" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"plan" text NOT NULL,
	"ends_at" timestamp with time zone,
	"reason" text DEFAULT '' NOT NULL,
	"created_by" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "payload" text;--> statement-breakpoint
ALTER TABLE "background_jobs" ADD COLUMN "trace_parent" text;--> statement-breakpoint
ALTER TABLE "plan_overrides" ADD CONSTRAINT "plan_overrides_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_events_received_idx" ON "webhook_events" USING btree ("received_at");