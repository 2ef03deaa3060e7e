-- A poll page's invalidations of the time-weighted aggregates (issue 40): one row per page (its floor spaces' ranges as
-- JSON), appended in the page's transaction; a refresh folds them into aggregate_invalidations (one row per floor
-- space) and deletes them in one transaction. An upsert of a row per floor space per page cost a Postgres page about
-- as much as its readings (docs/performance.md, "Keeping the time-weighted aggregates (issue 40)").
CREATE TABLE "aggregate_page_invalidations" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "aggregate_page_invalidations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"customer_id" text NOT NULL,
	"spans" text NOT NULL,
	"invalidated_at" timestamp(3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "aggregate_page_invalidations_customer_idx" ON "aggregate_page_invalidations" USING btree ("customer_id");
