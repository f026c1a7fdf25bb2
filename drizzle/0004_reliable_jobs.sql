CREATE TABLE "idempotency_keys" (
	"user_id" integer NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"state" text DEFAULT 'in_progress' NOT NULL,
	"response_status" integer,
	"response_headers" jsonb,
	"response_body" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_user_id_key_pk" PRIMARY KEY("user_id","key"),
	CONSTRAINT "idempotency_keys_state_check" CHECK ("idempotency_keys"."state" in ('in_progress', 'completed'))
);
--> statement-breakpoint
CREATE TABLE "background_jobs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"payload" jsonb NOT NULL,
	"state" text DEFAULT 'queued' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer NOT NULL,
	"delivery_id" uuid NOT NULL,
	"delivered_at" timestamp with time zone,
	"checked_at" timestamp with time zone,
	"run_after" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_until" timestamp with time zone,
	"worker_id" text,
	"request_id" text,
	"last_error" text,
	"redriven" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "background_jobs_state_check" CHECK ("background_jobs"."state" in ('queued', 'running', 'done', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "worker_heartbeats" (
	"id" text PRIMARY KEY NOT NULL,
	"hostname" text NOT NULL,
	"pid" integer NOT NULL,
	"concurrency" integer NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_tasks" ADD COLUMN "reply_id" uuid DEFAULT gen_random_uuid() NOT NULL;--> statement-breakpoint
CREATE INDEX "idempotency_keys_expires_idx" ON "idempotency_keys" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "background_jobs_open_idx" ON "background_jobs" USING btree ("state","run_after") WHERE "background_jobs"."state" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "background_jobs_finished_idx" ON "background_jobs" USING btree ("finished_at") WHERE "background_jobs"."finished_at" is not null;--> statement-breakpoint
CREATE INDEX "background_jobs_failed_idx" ON "background_jobs" USING btree ("name") WHERE "background_jobs"."state" = 'failed';--> statement-breakpoint
-- Upgrade: unfinished tasks recorded before background_jobs existed get a job, so the reconciler delivers them.
INSERT INTO "background_jobs" ("id", "name", "payload", "max_attempts", "delivery_id")
SELECT "id", 'documents.ingest', jsonb_build_object('taskId', "id"::text), 3, gen_random_uuid()
FROM "ingestion_tasks" WHERE "status" IN ('PENDING', 'STARTED', 'RETRY')
ON CONFLICT DO NOTHING;--> statement-breakpoint
INSERT INTO "background_jobs" ("id", "name", "payload", "max_attempts", "delivery_id")
SELECT "id", 'chat.agent-reply', jsonb_build_object('taskId', "id"::text), 3, gen_random_uuid()
FROM "agent_tasks" WHERE "status" IN ('PENDING', 'STARTED')
ON CONFLICT DO NOTHING;
