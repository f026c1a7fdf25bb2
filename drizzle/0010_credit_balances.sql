CREATE TABLE "credit_balances" (
	"workspace_id" uuid NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"used_usd" numeric(20, 8) DEFAULT 0 NOT NULL,
	"reserved_usd" numeric(20, 8) DEFAULT 0 NOT NULL,
	CONSTRAINT "credit_balances_pk" PRIMARY KEY("workspace_id","period_start")
);
--> statement-breakpoint
ALTER TABLE "credit_reservations" ADD COLUMN "period_start" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "credit_balances" ADD CONSTRAINT "credit_balances_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Hand-written: every insert into the ledger adds its cost to the running totals of the periods
-- it falls in (a period's credit counts the ledger since its start), as one statement trigger.
-- The per-workspace advisory lock orders these updates and makes opening a period's totals
-- (CreditRepo.openBalance, under the same lock) see every ledger row or be seen by it.
CREATE FUNCTION "credit_balances_add"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(w."workspace_id"::text, 0))
  FROM (SELECT DISTINCT "workspace_id" FROM inserted ORDER BY 1) w;
  UPDATE "credit_balances" AS b SET "used_usd" = b."used_usd" + n."total"
  FROM (
    SELECT cb."workspace_id", cb."period_start", sum(i."cost_usd") AS "total"
    FROM inserted i
    JOIN "credit_balances" cb ON cb."workspace_id" = i."workspace_id" AND cb."period_start" <= i."created_at"
    GROUP BY 1, 2
  ) n
  WHERE b."workspace_id" = n."workspace_id" AND b."period_start" = n."period_start";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "credit_balances_on_insert" AFTER INSERT ON "credit_usage"
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION "credit_balances_add"();
--> statement-breakpoint
-- Reservations older than the totals hold nothing from now on (calls in flight at the upgrade
-- are still charged when they settle); a period's totals are opened from the ledger on first use.
UPDATE "credit_reservations" SET "closed_at" = now() WHERE "closed_at" IS NULL;
