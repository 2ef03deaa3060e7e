-- A poll page's invalidations of the time-weighted aggregates (issue 40): one row per page (its floor spaces' ranges as
-- JSON), appended in the page's transaction; a refresh folds them into aggregate_invalidations (one row per floor
-- space) and deletes them in one transaction. An upsert of a row per floor space per page cost a Postgres page about
-- as much as its readings (docs/performance.md, "Keeping the time-weighted aggregates (issue 40)").
CREATE TABLE `aggregate_page_invalidations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`customer_id` text NOT NULL,
	`spans` text NOT NULL,
	`invalidated_at` text NOT NULL,
	CONSTRAINT "aggregate_page_invalidations_invalidated_at_iso" CHECK("aggregate_page_invalidations"."invalidated_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
);
--> statement-breakpoint
CREATE INDEX `aggregate_page_invalidations_customer_idx` ON `aggregate_page_invalidations` (`customer_id`);
