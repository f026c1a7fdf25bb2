CREATE TABLE "credit_usage_daily" (
	"workspace_id" uuid NOT NULL,
	"day" date NOT NULL,
	"user_id" integer DEFAULT 0 NOT NULL,
	"kind" text NOT NULL,
	"model" text NOT NULL,
	"calls" bigint DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric(20, 8) DEFAULT '0' NOT NULL,
	CONSTRAINT "credit_usage_daily_pk" PRIMARY KEY("workspace_id","day","user_id","kind","model")
);
--> statement-breakpoint
ALTER TABLE "credit_usage_daily" ADD CONSTRAINT "credit_usage_daily_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Hand-written: keeps credit_usage_daily in step with every insert into the ledger (one statement
-- trigger, so a bulk insert costs one aggregate upsert), then fills it from the existing ledger.
CREATE FUNCTION "credit_usage_daily_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "credit_usage_daily" AS d ("workspace_id", "day", "user_id", "kind", "model", "calls", "input_tokens", "output_tokens", "cost_usd")
  SELECT "workspace_id", ("created_at" AT TIME ZONE 'UTC')::date, coalesce("user_id", 0), "kind", "model",
         count(*), sum("input_tokens"), sum("output_tokens"), sum("cost_usd")
  FROM inserted
  GROUP BY 1, 2, 3, 4, 5
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT ("workspace_id", "day", "user_id", "kind", "model") DO UPDATE SET
    "calls" = d."calls" + excluded."calls",
    "input_tokens" = d."input_tokens" + excluded."input_tokens",
    "output_tokens" = d."output_tokens" + excluded."output_tokens",
    "cost_usd" = d."cost_usd" + excluded."cost_usd";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "credit_usage_daily_on_insert" AFTER INSERT ON "credit_usage"
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "credit_usage_daily_add"();
--> statement-breakpoint
INSERT INTO "credit_usage_daily" ("workspace_id", "day", "user_id", "kind", "model", "calls", "input_tokens", "output_tokens", "cost_usd")
SELECT "workspace_id", ("created_at" AT TIME ZONE 'UTC')::date, coalesce("user_id", 0), "kind", "model",
       count(*), sum("input_tokens"), sum("output_tokens"), sum("cost_usd")
FROM "credit_usage"
GROUP BY 1, 2, 3, 4, 5;
