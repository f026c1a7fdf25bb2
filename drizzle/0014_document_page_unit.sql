ALTER TABLE "documents" ADD COLUMN "page_unit" text;--> statement-breakpoint
ALTER TABLE "documents" ADD CONSTRAINT "documents_page_unit_check" CHECK ("documents"."page_unit" in ('page', 'sheet', 'slide', 'chapter'));--> statement-breakpoint
-- Documents ingested before the unit was stored: the file-name guess the prompt used until now,
-- for those whose chunks carry a page; reprocessing sets the unit from the format read.
UPDATE "documents" SET "page_unit" = CASE
    WHEN "name" ~* '\.(xlsx|xlsm|ods)$' THEN 'sheet'
    WHEN "name" ~* '\.(pptx|pptm|odp)$' THEN 'slide'
    WHEN "name" ~* '\.epub$' THEN 'chapter'
    ELSE 'page'
  END
  WHERE EXISTS (SELECT 1 FROM "document_chunks" c WHERE c."document_id" = "documents"."id" AND c."page" IS NOT NULL);
